//! Leaves `queue_task` without any index that a claim or a completion changes, so that on
//! PostgreSQL both rewrite the row within its page without touching an index (a HOT update):
//! until now every claim and completion wrote a new entry into each index whose columns or
//! predicate name `workflow_status` or `workflow_stopped_date`. What those indexes answered:
//!
//! - the claim order: `queue_ready` (`m20261124_000070_ready_table`);
//! - the counts by status and the throughput: `queue_task_count` and `queue_throughput`
//!   (`m20261124_000060_task_counts`);
//! - a unique key among active tasks: a unique index on `active_unique_key`, a generated
//!   column holding `unique_key` while the task is QUEUED, SCHEDULING or EXECUTING and NULL
//!   after, whose value neither a claim nor the completion of a task without a key changes.
//!   The index is partial (`IS NOT NULL`): SQLite, which cannot tell that a generated value
//!   stayed the same, would otherwise rewrite every task's NULL entry on every status change;
//!   only keyed tasks enter it;
//! - the lists of tasks that ended badly (the admin's problems): `problem_status`, a
//!   generated column holding FAILURE, ERROR or ABANDONED and NULL otherwise, in a partial
//!   index that only those rare rows enter and leave;
//! - lists newest first and the pruner's old tasks: `(created_date, id)`, which never
//!   changes (a task stops after it was created, so the pruner's range ends there).
//!
//! The rescuer's and the stalled list's running tasks are now found by reading the table
//! (see ARCHITECTURE, "Nodes, heartbeats, rescue"). PostgreSQL keeps half of each new page
//! free (`fillfactor`) for the next versions of its rows; SQLite has no HOT updates, and its
//! generated columns are virtual (SQLite cannot add a stored one to a table).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The generated columns, as `(name, type, expression)`.
pub(super) const GENERATED: [(&str, &str, &str); 2] = [
    (
        "active_unique_key",
        "VARCHAR(256)",
        "CASE WHEN workflow_status IN ('QUEUED', 'SCHEDULING', 'EXECUTING') THEN unique_key END",
    ),
    (
        "problem_status",
        "VARCHAR(16)",
        "CASE WHEN workflow_status IN ('FAILURE', 'ERROR', 'ABANDONED') THEN workflow_status END",
    ),
];

/// On PostgreSQL, the row trigger and its function that keep the generated columns' values
/// once they are plain columns (`m20261128_000160_derived_columns_kept_by_triggers`); they
/// go with the columns.
pub(super) const DERIVED_KEEPER: &str = "queue_task_derived_columns";

const NEW_INDEXES: [&str; 3] = [
    "CREATE UNIQUE INDEX idx_queue_task_active_unique_key ON queue_task (active_unique_key) \
     WHERE active_unique_key IS NOT NULL",
    "CREATE INDEX idx_queue_task_problem ON queue_task (problem_status, created_date) \
     WHERE problem_status IS NOT NULL",
    "CREATE INDEX idx_queue_task_created ON queue_task (created_date, id)",
];

/// The indexes dropped, with their definitions for `down`.
const OLD_INDEXES: [(&str, &str); 4] = [
    (
        "idx_queue_task_unique_key",
        "CREATE UNIQUE INDEX idx_queue_task_unique_key ON queue_task (unique_key) \
         WHERE unique_key IS NOT NULL AND workflow_status IN ('QUEUED', 'SCHEDULING', 'EXECUTING')",
    ),
    (
        "idx_queue_task_claim",
        "CREATE INDEX idx_queue_task_claim ON queue_task (priority DESC, run_at, id) \
         WHERE workflow_status = 'QUEUED'",
    ),
    (
        "idx_queue_task_status_component",
        "CREATE INDEX idx_queue_task_status_component \
         ON queue_task (workflow_status, execution_component_name)",
    ),
    (
        "idx_queue_task_stopped",
        "CREATE INDEX idx_queue_task_stopped ON queue_task (workflow_stopped_date) \
         WHERE workflow_stopped_date IS NOT NULL",
    ),
];

/// How full PostgreSQL packs each new page of `queue_task`, in percent: the rest is room
/// for a claimed row's next version and its completion's within the same page.
pub(super) const FILLFACTOR: u32 = 50;

/// The statement that makes PostgreSQL pack new pages of `queue_task` to `percent`.
pub(super) fn set_fillfactor(percent: u32) -> String {
    format!("ALTER TABLE queue_task SET (fillfactor = {percent})")
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let postgres = manager.get_database_backend() == DatabaseBackend::Postgres;
        let storage = if postgres { "STORED" } else { "VIRTUAL" };
        let mut statements: Vec<String> = GENERATED
            .iter()
            .map(|(name, sql_type, expression)| {
                format!(
                    "ALTER TABLE queue_task ADD COLUMN {name} {sql_type} \
                     GENERATED ALWAYS AS ({expression}) {storage}"
                )
            })
            .collect();
        statements.extend(NEW_INDEXES.iter().map(|sql| (*sql).to_owned()));
        statements.extend(
            OLD_INDEXES
                .iter()
                .map(|(name, _)| format!("DROP INDEX {name}")),
        );
        if postgres {
            statements.push(set_fillfactor(FILLFACTOR));
        }
        for sql in statements {
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let postgres = manager.get_database_backend() == DatabaseBackend::Postgres;
        let mut statements: Vec<String> = OLD_INDEXES
            .iter()
            .map(|(_, sql)| (*sql).to_owned())
            .collect();
        if postgres {
            statements.push(format!(
                "DROP TRIGGER IF EXISTS {DERIVED_KEEPER} ON queue_task"
            ));
            statements.push(format!("DROP FUNCTION IF EXISTS {DERIVED_KEEPER}()"));
        }
        statements.extend(
            [
                "idx_queue_task_active_unique_key",
                "idx_queue_task_problem",
                "idx_queue_task_created",
            ]
            .iter()
            .map(|name| format!("DROP INDEX {name}")),
        );
        statements.extend(
            GENERATED
                .iter()
                .map(|(name, _, _)| format!("ALTER TABLE queue_task DROP COLUMN {name}")),
        );
        if postgres {
            statements.push("ALTER TABLE queue_task RESET (fillfactor)".to_owned());
        }
        for sql in statements {
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }
}
