//! `queue_ready`: the queued tasks' claim order in a narrow table of its own, kept by
//! triggers on `queue_task` (an entry exists exactly while its task is QUEUED). The claim,
//! the producer's next wake-up and the backlog age read it instead of a partial index of
//! `queue_task` whose predicate names `workflow_status`; that index is one of those which
//! keep PostgreSQL from updating a claimed or completed task in place (see ARCHITECTURE,
//! "Claiming").
//!
//! Triggers for the same reasons as the counts' (`m20261124_000060_task_counts`): no writer
//! can forget an entry, and a claim or completion stays one statement. On PostgreSQL the
//! counts' statement-level function is replaced by one that keeps both, so a statement
//! runs one trigger function, not two.

use sea_orm_migration::sea_orm::DatabaseBackend;
use sea_orm_migration::{prelude::*, schema::*};

use super::m20261124_000060_task_counts as counts;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The table, with the column types of `queue_task`'s columns it copies: on SQLite a
/// different declared type (`UUID` rather than SeaQuery's `uuid_text`) gives a column
/// another affinity, and SQLite then cannot look the entries' ids up in `queue_task`'s
/// primary key (the claim read the whole table).
fn table() -> TableCreateStatement {
    Table::create()
        .table("queue_ready")
        .col(uuid("task_id").primary_key())
        .col(integer("priority"))
        .col(timestamp_with_time_zone("run_at"))
        .col(string_len("component", 128))
        .to_owned()
}

/// The claim order.
pub(super) const CLAIM_INDEX: &str =
    "CREATE INDEX idx_queue_ready_claim ON queue_ready (priority DESC, run_at, task_id)";

/// PostgreSQL: no task changes between the backfill and the commit that puts the new
/// trigger function in force (SQLite has one writer).
const POSTGRES_LOCK: &str = "LOCK TABLE queue_task IN SHARE ROW EXCLUSIVE MODE";

/// The entries of the tasks queued already.
const BACKFILL: &str = "INSERT INTO queue_ready (task_id, priority, run_at, component) \
     SELECT id, priority, run_at, execution_component_name FROM queue_task \
     WHERE workflow_status = 'QUEUED'";

/// PostgreSQL: the statements that keep `queue_ready`, per trigger event, for the shared
/// function. An UPDATE deletes the entries of tasks that were QUEUED and are not any more
/// (a claim: no lookup for the other updates' rows) and upserts those of QUEUED tasks
/// (their `run_at` or priority may have changed).
pub(super) const POSTGRES_READY_ON_INSERT: &str =
    "INSERT INTO queue_ready (task_id, priority, run_at, component)
                SELECT id, priority, run_at, execution_component_name FROM new_rows
                WHERE workflow_status = 'QUEUED';";
const POSTGRES_READY_ON_DELETE: &str = "DELETE FROM queue_ready WHERE task_id IN (
                    SELECT id FROM old_rows WHERE workflow_status = 'QUEUED');";
const POSTGRES_READY_DEQUEUE: &str = "DELETE FROM queue_ready WHERE task_id IN (
                    SELECT o.id FROM old_rows o WHERE o.workflow_status = 'QUEUED'
                    EXCEPT SELECT n.id FROM new_rows n WHERE n.workflow_status = 'QUEUED');";
pub(super) const POSTGRES_READY_UPSERT: &str =
    "INSERT INTO queue_ready AS r (task_id, priority, run_at, component)
                SELECT id, priority, run_at, execution_component_name FROM new_rows
                WHERE workflow_status = 'QUEUED'
                ON CONFLICT (task_id) DO UPDATE SET priority = excluded.priority,
                    run_at = excluded.run_at, component = excluded.component;";

/// The shared trigger function as this migration defines it (`m20261124_000090_steady_plans`
/// replaces it, and restores this one when rolled back).
pub(super) fn postgres_function() -> String {
    counts::postgres_function(
        POSTGRES_READY_ON_INSERT,
        &format!("{POSTGRES_READY_DEQUEUE}\n                {POSTGRES_READY_UPSERT}"),
        POSTGRES_READY_ON_DELETE,
    )
}

/// SQLite's row-level triggers. The one removing the entry of a task that leaves QUEUED
/// passes over the claim's move to EXECUTING: the claim takes its entries itself, in one
/// statement (see `dialect::SQLITE_CLAIM`).
pub(super) const SQLITE_TRIGGERS: [&str; 4] = [
    "CREATE TRIGGER queue_task_ready_insert AFTER INSERT ON queue_task \
     WHEN NEW.workflow_status = 'QUEUED' BEGIN \
       INSERT INTO queue_ready (task_id, priority, run_at, component) \
       VALUES (NEW.id, NEW.priority, NEW.run_at, NEW.execution_component_name); \
     END",
    "CREATE TRIGGER queue_task_ready_requeue \
     AFTER UPDATE OF workflow_status, run_at, priority, execution_component_name ON queue_task \
     WHEN NEW.workflow_status = 'QUEUED' BEGIN \
       INSERT OR REPLACE INTO queue_ready (task_id, priority, run_at, component) \
       VALUES (NEW.id, NEW.priority, NEW.run_at, NEW.execution_component_name); \
     END",
    "CREATE TRIGGER queue_task_ready_dequeue AFTER UPDATE OF workflow_status ON queue_task \
     WHEN OLD.workflow_status = 'QUEUED' AND NEW.workflow_status NOT IN ('QUEUED', 'EXECUTING') \
     BEGIN \
       DELETE FROM queue_ready WHERE task_id = OLD.id; \
     END",
    "CREATE TRIGGER queue_task_ready_delete AFTER DELETE ON queue_task \
     WHEN OLD.workflow_status = 'QUEUED' BEGIN \
       DELETE FROM queue_ready WHERE task_id = OLD.id; \
     END",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let triggers: Vec<String> = match manager.get_database_backend() {
            DatabaseBackend::Postgres => vec![POSTGRES_LOCK.to_owned(), postgres_function()],
            _ => SQLITE_TRIGGERS
                .iter()
                .map(|sql| (*sql).to_owned())
                .collect(),
        };
        manager.create_table(table()).await?;
        let statements = [CLAIM_INDEX]
            .into_iter()
            .chain(triggers.iter().map(String::as_str))
            .chain([BACKFILL]);
        for sql in statements {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DatabaseBackend::Postgres => {
                db.execute_unprepared(&counts::postgres_function("", "", ""))
                    .await?;
            }
            _ => {
                for trigger in [
                    "queue_task_ready_insert",
                    "queue_task_ready_requeue",
                    "queue_task_ready_dequeue",
                    "queue_task_ready_delete",
                ] {
                    db.execute_unprepared(&format!("DROP TRIGGER {trigger}"))
                        .await?;
                }
            }
        }
        manager
            .drop_table(Table::drop().table("queue_ready").to_owned())
            .await
    }
}
