//! Counts of tasks by component and status, and completions per minute, kept by triggers on
//! `queue_task`, so that a dashboard or a metrics scrape reads a few rows instead of counting
//! a million retained tasks through a status index on every refresh. It is also the first
//! step away from indexing `queue_task` by status (see ARCHITECTURE, "Counting"): an update
//! that touches no indexed column can be a HOT update on PostgreSQL.
//!
//! Triggers rather than code in each statement, so that no writer can miss a count: every
//! insert, status change and delete (the pruner's, a test's, an older node's during a
//! rolling upgrade) is counted in the transaction that makes it.
//!
//! PostgreSQL: one statement-level trigger per event, reading the statement's rows from
//! transition tables, adds one delta per (component, status) a statement changed. The deltas
//! land in a row of their own per database session (`shard` = `pg_backend_pid()`), so
//! concurrent claims and completions never wait on one counter row's lock; a reader sums the
//! shards, and the pruner folds them into shard 0 now and then.
//!
//! SQLite: row-level triggers (SQLite has no others) into shard 0; it has one writer anyway.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Both backends' tables. `minute` is minutes since the Unix epoch: integer arithmetic the
/// two backends agree on, where their date types and text formats do not.
const TABLES: [&str; 2] = [
    "CREATE TABLE queue_task_count ( \
         component VARCHAR(128) NOT NULL, status VARCHAR(16) NOT NULL, \
         shard INTEGER NOT NULL, tasks BIGINT NOT NULL, \
         PRIMARY KEY (component, status, shard))",
    "CREATE TABLE queue_throughput ( \
         minute BIGINT NOT NULL, shard INTEGER NOT NULL, completed BIGINT NOT NULL, \
         PRIMARY KEY (minute, shard))",
];

/// The counts of the tasks already there, written before any writer can change them (the
/// triggers' creation locks `queue_task` against writes until this migration commits).
/// Retained completions fill the throughput table as far back as they go.
fn backfill(backend: DatabaseBackend) -> [String; 2] {
    [
        "INSERT INTO queue_task_count (component, status, shard, tasks) \
         SELECT execution_component_name, workflow_status, 0, COUNT(*) FROM queue_task \
         GROUP BY execution_component_name, workflow_status"
            .to_owned(),
        format!(
            "INSERT INTO queue_throughput (minute, shard, completed) \
             SELECT {minute}, 0, COUNT(*) FROM queue_task \
             WHERE workflow_status = 'COMPLETED' AND workflow_stopped_date IS NOT NULL \
             GROUP BY {minute}",
            minute = epoch_minute(backend, "workflow_stopped_date"),
        ),
    ]
}

/// `column`'s minute since the Unix epoch, in `backend`'s SQL.
pub(super) fn epoch_minute(backend: DatabaseBackend, column: &str) -> String {
    match backend {
        DatabaseBackend::Postgres => {
            format!("CAST(FLOOR(EXTRACT(EPOCH FROM {column}) / 60) AS BIGINT)")
        }
        _ => format!("CAST(strftime('%s', {column}) AS INTEGER) / 60"),
    }
}

/// PostgreSQL's function and triggers. An UPDATE's deltas are its rows' new (component,
/// status) minus their old ones, so an update that changes no status (a checkpoint) adds
/// nothing; completions are counted the same way per minute of `workflow_stopped_date`.
fn postgres_triggers() -> Vec<String> {
    vec![
        postgres_function("", "", ""),
        "CREATE TRIGGER queue_task_counted_insert AFTER INSERT ON queue_task \
         REFERENCING NEW TABLE AS new_rows \
         FOR EACH STATEMENT EXECUTE FUNCTION queue_task_count_changes()"
            .to_owned(),
        "CREATE TRIGGER queue_task_counted_update AFTER UPDATE ON queue_task \
         REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows \
         FOR EACH STATEMENT EXECUTE FUNCTION queue_task_count_changes()"
            .to_owned(),
        "CREATE TRIGGER queue_task_counted_delete AFTER DELETE ON queue_task \
         REFERENCING OLD TABLE AS old_rows \
         FOR EACH STATEMENT EXECUTE FUNCTION queue_task_count_changes()"
            .to_owned(),
    ]
}

/// The function of PostgreSQL's three triggers, `CREATE OR REPLACE`d, with further
/// statements to run on an insert, an update and a delete (a later migration's, so that
/// one function per statement keeps everything the triggers keep).
pub(super) fn postgres_function(on_insert: &str, on_update: &str, on_delete: &str) -> String {
    postgres_function_after("", on_insert, on_update, on_delete)
}

/// [`postgres_function`] with `first`, statements that run before anything else (a later
/// migration's test for statements that keep the counts themselves).
pub(super) fn postgres_function_after(
    first: &str,
    on_insert: &str,
    on_update: &str,
    on_delete: &str,
) -> String {
    let minute = epoch_minute(DatabaseBackend::Postgres, "workflow_stopped_date");
    format!(
        "CREATE OR REPLACE FUNCTION queue_task_count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              {first}
              IF TG_OP = 'INSERT' THEN
                INSERT INTO queue_task_count AS c (component, status, shard, tasks)
                SELECT execution_component_name, workflow_status, pg_backend_pid(), COUNT(*)
                FROM new_rows GROUP BY execution_component_name, workflow_status
                ON CONFLICT (component, status, shard) DO UPDATE SET tasks = c.tasks + excluded.tasks;
                {on_insert}
              ELSIF TG_OP = 'DELETE' THEN
                INSERT INTO queue_task_count AS c (component, status, shard, tasks)
                SELECT execution_component_name, workflow_status, pg_backend_pid(), -COUNT(*)
                FROM old_rows GROUP BY execution_component_name, workflow_status
                ON CONFLICT (component, status, shard) DO UPDATE SET tasks = c.tasks + excluded.tasks;
                {on_delete}
              ELSE
                INSERT INTO queue_task_count AS c (component, status, shard, tasks)
                SELECT component, status, pg_backend_pid(), SUM(delta) FROM (
                    SELECT execution_component_name AS component, workflow_status AS status,
                           -1 AS delta FROM old_rows
                    UNION ALL
                    SELECT execution_component_name, workflow_status, 1 FROM new_rows) AS change
                GROUP BY component, status HAVING SUM(delta) <> 0
                ON CONFLICT (component, status, shard) DO UPDATE SET tasks = c.tasks + excluded.tasks;
                INSERT INTO queue_throughput AS t (minute, shard, completed)
                SELECT minute, pg_backend_pid(), SUM(delta) FROM (
                    SELECT {minute} AS minute, -1 AS delta FROM old_rows
                    WHERE workflow_status = 'COMPLETED'
                    UNION ALL
                    SELECT {minute}, 1 FROM new_rows WHERE workflow_status = 'COMPLETED') AS change
                GROUP BY minute HAVING SUM(delta) <> 0
                ON CONFLICT (minute, shard) DO UPDATE SET completed = t.completed + excluded.completed;
                {on_update}
              END IF;
              RETURN NULL;
            END $$"
    )
}

/// SQLite's triggers, one per row. The SELECT … WHERE form of the INSERT is what lets an
/// upsert follow a SELECT in SQLite's grammar.
fn sqlite_triggers() -> Vec<String> {
    let add = |row: &str, delta: i32| {
        format!(
            "INSERT INTO queue_task_count (component, status, shard, tasks) \
             VALUES ({row}.execution_component_name, {row}.workflow_status, 0, {delta}) \
             ON CONFLICT (component, status, shard) DO UPDATE SET tasks = tasks + excluded.tasks;"
        )
    };
    vec![
        format!(
            "CREATE TRIGGER queue_task_counted_insert AFTER INSERT ON queue_task BEGIN {} END",
            add("NEW", 1)
        ),
        format!(
            "CREATE TRIGGER queue_task_counted_delete AFTER DELETE ON queue_task BEGIN {} END",
            add("OLD", -1)
        ),
        format!(
            "CREATE TRIGGER queue_task_counted_update \
             AFTER UPDATE OF workflow_status, execution_component_name ON queue_task \
             WHEN OLD.workflow_status IS NOT NEW.workflow_status \
               OR OLD.execution_component_name IS NOT NEW.execution_component_name \
             BEGIN {} {} \
               INSERT INTO queue_throughput (minute, shard, completed) \
               SELECT {}, 0, 1 \
               WHERE NEW.workflow_status = 'COMPLETED' AND OLD.workflow_status <> 'COMPLETED' \
               ON CONFLICT (minute, shard) DO UPDATE SET completed = completed + excluded.completed; \
             END",
            add("OLD", -1),
            add("NEW", 1),
            epoch_minute(DatabaseBackend::Sqlite, "NEW.workflow_stopped_date"),
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let triggers = match backend {
            DatabaseBackend::Postgres => postgres_triggers(),
            _ => sqlite_triggers(),
        };
        let statements = TABLES
            .iter()
            .map(|sql| (*sql).to_owned())
            .chain(triggers)
            .chain(backfill(backend));
        let db = manager.get_connection();
        for sql in statements {
            db.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for trigger in [
            "queue_task_counted_insert",
            "queue_task_counted_update",
            "queue_task_counted_delete",
        ] {
            let sql = match manager.get_database_backend() {
                DatabaseBackend::Postgres => format!("DROP TRIGGER {trigger} ON queue_task"),
                _ => format!("DROP TRIGGER {trigger}"),
            };
            db.execute_unprepared(&sql).await?;
        }
        if manager.get_database_backend() == DatabaseBackend::Postgres {
            db.execute_unprepared("DROP FUNCTION queue_task_count_changes()")
                .await?;
        }
        for table in ["queue_throughput", "queue_task_count"] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
