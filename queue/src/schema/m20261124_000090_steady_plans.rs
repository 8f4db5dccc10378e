//! PostgreSQL: the claim and the triggers reach `queue_ready` through its indexes whatever
//! its statistics say.
//!
//! `queue_ready` is empty whenever the queue is drained, and that is when autovacuum (or an
//! administrator's `VACUUM ANALYZE`) tends to look at it: the table is truncated to no
//! pages and its row count recorded as 0. A plan made from then on expects one row, so it
//! reads the table from start to end and sorts or nests whatever it finds, and plans are
//! kept (a prepared statement's generic plan, a PL/pgSQL function's statements) until the
//! next vacuum of the table. Once a backlog arrives, every claim joined every queued task
//! and sorted them, and the trigger's `DELETE … WHERE task_id IN (…)` ran the claimed ids'
//! subquery once per queued entry, so each claim cost time in proportion to the backlog
//! and an aged queue drained at a fraction of a fresh one's rate (ADR 0008).
//!
//! PostgreSQL has no per-statement hints, but a function can carry its own settings, and
//! with sequential scans and sorts priced out the planner keeps to the indexes:
//! - the claim moves into `queue_claim(due, node, wanted)`, whose plan walks the claim
//!   index in order and finds the chosen tasks by their primary key (`queue_task` can look
//!   empty to the planner too: on a new installation);
//! - the trigger function looks entries up by an array of ids, which gives its planner no
//!   join to turn around, and runs without sequential scans;
//! - the claim index ends in `uuid_send(task_id)` (the id's bytes, which sort as the id
//!   does) rather than `task_id`: with both indexes naming `task_id`, the planner, costing
//!   a table it believes empty, looked the trigger's ids up by reading the claim index
//!   from end to end, as cheap to it as the primary key (ADR 0008).
//!
//! A later migration that `CREATE OR REPLACE`s the trigger function must set its
//! `enable_seqscan` again: a replaced function keeps no setting it does not restate.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use super::m20261124_000060_task_counts as counts;
use super::m20261124_000070_ready_table as ready;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The claim (`dialect::POSTGRES_CLAIM` calls it): up to `wanted` due tasks of unpaused
/// components, in claim order, locked (`SKIP LOCKED`: concurrent claimers pass over each
/// other's) and marked started by `node`; returns them. The rows locked are the tasks', for
/// the reason `dialect::POSTGRES_CLAIM` gives. The choice is an uncorrelated subquery, so
/// it runs once, and its ids are looked up in the primary key.
pub(super) fn claim() -> String {
    format!(
        "CREATE FUNCTION queue_claim(due TIMESTAMPTZ, node TEXT, wanted BIGINT) \
         RETURNS SETOF queue_task LANGUAGE plpgsql SET enable_seqscan = off SET enable_sort = off AS $$
         BEGIN
           RETURN QUERY {CLAIM_UPDATE};
         END $$"
    )
}

/// The claim's statement, in `queue_claim`'s parameters (a later migration's claim wraps it).
pub(super) const CLAIM_UPDATE: &str = "UPDATE queue_task SET workflow_status = 'EXECUTING',
           scheduling_started_date = due, execution_started_date = due,
           scheduled_by_process = node, modified_date = due, modified_by = node,
           attempt = queue_task.attempt + 1, lease_version = queue_task.lease_version + 1
       WHERE queue_task.id = ANY(ARRAY(
           SELECT t.id FROM queue_ready r JOIN queue_task t ON t.id = r.task_id
           WHERE r.run_at <= due
             AND r.component NOT IN (SELECT component FROM queue_component_pause)
           ORDER BY r.priority DESC, r.run_at, uuid_send(r.task_id)
           LIMIT wanted
           FOR UPDATE OF t SKIP LOCKED))
         AND queue_task.workflow_status = 'QUEUED'
       RETURNING queue_task.*";

/// The entries of the deleted tasks that were QUEUED.
pub(super) const ON_DELETE: &str = "DELETE FROM queue_ready WHERE task_id = ANY(ARRAY(
                    SELECT id FROM old_rows WHERE workflow_status = 'QUEUED'));";

/// The entries of the tasks that were QUEUED and are not any more, then the upsert of the
/// queued tasks' entries (as `m20261124_000070_ready_table` keeps them).
pub(super) fn on_update() -> String {
    on_update_upserting(ready::POSTGRES_READY_UPSERT)
}

/// [`on_update`] with `upsert` writing the queued tasks' entries (a later migration's).
pub(super) fn on_update_upserting(upsert: &str) -> String {
    format!(
        "DELETE FROM queue_ready WHERE task_id = ANY(ARRAY(
                    SELECT o.id FROM old_rows o WHERE o.workflow_status = 'QUEUED'
                    EXCEPT SELECT n.id FROM new_rows n WHERE n.workflow_status = 'QUEUED'));
                {upsert}"
    )
}

const DROP_CLAIM_INDEX: &str = "DROP INDEX idx_queue_ready_claim";

/// The claim order, by an index that a lookup by `task_id` cannot use.
const CLAIM_INDEX: &str =
    "CREATE INDEX idx_queue_ready_claim ON queue_ready (priority DESC, run_at, uuid_send(task_id))";

pub(super) const TRIGGER_FUNCTION_SETTINGS: &str =
    "ALTER FUNCTION queue_task_count_changes() SET enable_seqscan = off";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let function =
            counts::postgres_function(ready::POSTGRES_READY_ON_INSERT, &on_update(), ON_DELETE);
        let statements = [
            DROP_CLAIM_INDEX,
            CLAIM_INDEX,
            &claim(),
            &function,
            TRIGGER_FUNCTION_SETTINGS,
        ];
        super::on_postgres(manager, &statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("DROP FUNCTION queue_claim(TIMESTAMPTZ, TEXT, BIGINT)")
            .await?;
        db.execute_unprepared(&ready::postgres_function()).await?;
        db.execute_unprepared(DROP_CLAIM_INDEX).await?;
        db.execute_unprepared(ready::CLAIM_INDEX).await?;
        Ok(())
    }
}
