//! PostgreSQL: the claim and the completion keep the counts and the ready table themselves,
//! and the trigger function passes over their statements.
//!
//! The statement-level trigger (`m20261124_000060_task_counts`, `m20261124_000070_ready_table`)
//! works for any UPDATE: it reads the old and the new rows twice each to count the changes by
//! component and status and the completions per minute, and twice more to find the entries
//! of `queue_ready` to delete and upsert. For the two statements a drain repeats for every
//! task, almost all of that is known in advance: a claim moves QUEUED tasks to EXECUTING and
//! takes exactly their entries; a completion moves EXECUTING tasks to COMPLETED and touches
//! no entry. So each runs in a function that writes those deltas from its own RETURNING rows
//! (one pass), deletes the claimed entries by id, and sets the transaction-local setting
//! `bulkq.counted` around its UPDATE; the trigger function returns at once while it is `on`.
//! Every other writer (a retry, an admin's repair, the pruner, an older node) is still kept
//! by the trigger, so none can forget a count (ADR 0007).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use super::m20261124_000060_task_counts as counts;
use super::m20261124_000070_ready_table as ready;
use super::m20261124_000090_steady_plans as steady;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The trigger function's first statement: nothing to do for a statement that keeps the
/// counts and the ready table itself.
pub(super) const SKIP_COUNTED: &str =
    "IF current_setting('bulkq.counted', true) = 'on' THEN RETURN NULL; END IF;";

/// Before the UPDATE of a function that counts for itself; `true`: until the transaction
/// ends, should the UPDATE fail before [`COUNTING_DONE`].
pub(super) const COUNTING: &str = "PERFORM set_config('bulkq.counted', 'on', true);";

/// After it: the transaction's later statements are the trigger's again.
pub(super) const COUNTING_DONE: &str = "PERFORM set_config('bulkq.counted', '', true);";

/// The claim (`dialect::POSTGRES_CLAIM` calls it): `m20261124_000090_steady_plans`'s UPDATE,
/// now also taking the claimed tasks' entries off `queue_ready` and moving their count from
/// QUEUED to EXECUTING, from the rows it changed.
fn claim() -> String {
    format!(
        "CREATE OR REPLACE FUNCTION queue_claim(due TIMESTAMPTZ, node TEXT, wanted BIGINT) \
         RETURNS SETOF queue_task LANGUAGE plpgsql SET enable_seqscan = off SET enable_sort = off AS $$
         BEGIN
           {COUNTING}
           RETURN QUERY
           WITH claimed AS ({update}),
           taken AS (
             DELETE FROM queue_ready WHERE task_id = ANY(ARRAY(SELECT id FROM claimed))),
           counted AS ({moved})
           SELECT * FROM claimed;
           {COUNTING_DONE}
         END $$",
        update = steady::CLAIM_UPDATE,
        moved = moved_counts("claimed", "QUEUED", "EXECUTING"),
    )
}

/// The columns of a completed task's event (`announce::EventColumns`), as the completion
/// returns them.
const EVENT_TYPE: &str = "CREATE TYPE queue_event_columns AS ( \
     id UUID, execution_component_name VARCHAR(128), owner_id UUID, \
     workflow_status VARCHAR(16), attempt INTEGER, progress_done BIGINT, progress_total BIGINT)";

/// The completion (`dialect::POSTGRES_COMPLETE` calls it): the tasks of the claims `(ids,
/// leases)` still running under that lease (as `store::claim::ClaimMatch` finds them)
/// become COMPLETED as `Transition::Complete` sets them, counted from EXECUTING to COMPLETED
/// and in the minute's throughput. `also_set`: further assignments of its UPDATE, each
/// after a comma (a later migration's).
pub(super) fn complete(also_set: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION queue_complete( \
             ids UUID[], leases BIGINT[], due TIMESTAMPTZ, node TEXT) \
         RETURNS SETOF queue_event_columns LANGUAGE plpgsql SET enable_seqscan = off AS $$
         BEGIN
           {COUNTING}
           RETURN QUERY
           WITH completed AS (
             UPDATE queue_task SET workflow_status = 'COMPLETED', workflow_status_desc = NULL,
                 modified_date = due, modified_by = node,
                 lease_version = queue_task.lease_version + 1, workflow_stopped_date = due{also_set}
             FROM (SELECT unnest(ids) AS claimed_id, unnest(leases) AS claimed_lease) AS claim
             WHERE queue_task.id = claim.claimed_id
               AND queue_task.lease_version = claim.claimed_lease
               AND queue_task.workflow_status = 'EXECUTING'
             RETURNING queue_task.id, queue_task.execution_component_name,
                 queue_task.owner_id, queue_task.workflow_status, queue_task.attempt,
                 queue_task.progress_done, queue_task.progress_total),
           counted AS ({moved}),
           throughput AS (
             INSERT INTO queue_throughput AS p (minute, shard, completed)
             SELECT {minute}, pg_backend_pid(), COUNT(*)
             FROM completed HAVING COUNT(*) > 0
             ON CONFLICT (minute, shard) DO UPDATE SET completed = p.completed + excluded.completed)
           SELECT * FROM completed;
           {COUNTING_DONE}
         END $$",
        moved = moved_counts("completed", "EXECUTING", "COMPLETED"),
        minute = counts::epoch_minute(DatabaseBackend::Postgres, "due"),
    )
}

/// The upsert moving the count of `rows` (a CTE of tasks with their component) from status
/// `from` to status `to`, in the session's shard as the trigger keeps it.
pub(super) fn moved_counts(rows: &str, from: &str, to: &str) -> String {
    format!(
        "INSERT INTO queue_task_count AS c (component, status, shard, tasks)
             SELECT execution_component_name, moved.status, pg_backend_pid(), moved.delta * COUNT(*)
             FROM {rows} CROSS JOIN (VALUES ('{from}', -1), ('{to}', 1)) AS moved (status, delta)
             GROUP BY execution_component_name, moved.status, moved.delta
             ON CONFLICT (component, status, shard) DO UPDATE SET tasks = c.tasks + excluded.tasks"
    )
}

/// The trigger function as `m20261124_000090_steady_plans` left it, after `first` and with
/// `after_update` last in its UPDATE branch (a later migration's).
pub(super) fn trigger_function(first: &str, after_update: &str) -> String {
    counts::postgres_function_after(
        first,
        ready::POSTGRES_READY_ON_INSERT,
        &format!("{}{after_update}", steady::on_update()),
        steady::ON_DELETE,
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = [
            &trigger_function(SKIP_COUNTED, ""),
            steady::TRIGGER_FUNCTION_SETTINGS,
            &claim(),
            EVENT_TYPE,
            &complete(""),
        ];
        super::on_postgres(manager, &statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let statements = [
            "DROP FUNCTION queue_complete(UUID[], BIGINT[], TIMESTAMPTZ, TEXT)",
            "DROP TYPE queue_event_columns",
            "DROP FUNCTION queue_claim(TIMESTAMPTZ, TEXT, BIGINT)",
            &steady::claim(),
            &trigger_function("", ""),
            steady::TRIGGER_FUNCTION_SETTINGS,
        ];
        super::on_postgres(manager, &statements).await
    }
}
