//! PostgreSQL: the claim taking turns reads each owner's taken entries once, not three times.
//!
//! A claim deletes the entries it takes, but an index keeps their keys until the deleting
//! transaction is older than every snapshot; until then each scan that passes them fetches
//! them from the heap to learn they are gone. In a drain those are the last claims' entries,
//! at the front of each owner's range of the owner index. `m20261207_001200_claims_by_quota`
//! walked them three times per owner (finding the owner, its first due task, its quota's
//! tasks) where the strict order's claim walks them once (ADR 0085, amended, measures what
//! that and the rest cost). Now the walk that finds an owner also returns its first entry; that
//! entry is its first due task unless it is for later or of a paused component (then one
//! probe finds it, as before); and the quota's tasks are read from that task on, at its
//! priority, so that scan starts past the taken entries.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use super::m20261129_000170_owner_turns as turns;
use super::m20261207_001200_claims_by_quota as quotas;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The tasks the claim takes while more than one owner has queued tasks (locked, in no
/// order: the node puts them in turn order, `store::claim::in_turn_order`).
///
/// - `queued_owners`: each owner's first entry in claim order (one probe of the owner index
///   per owner, a skip scan).
/// - `due_owners`: each owner's first due task of an unpaused component: the first entry, or
///   when that is for later or paused, one more probe.
/// - `ranked`, `filled`, `quota`: as in `m20261207_001200_claims_by_quota`.
/// - the tasks: each reached owner's due tasks up to its quota, in its claim order: first
///   those at its first due task's priority from that task on (a row comparison the index
///   starts from), then, if the quota is not filled, those of lower priorities.
///
/// Each scan of one owner's entries bounds `owner_id` by `>=` and `<=` rather than `=`:
/// with `=` the planner may read the owner's tasks from the claim index (priority, age),
/// filtering out every other owner's entries between them, for it prices the two alike.
/// The bounds leave only the owner index in key order, which `enable_sort = off` requires.
fn past_taken_chosen() -> String {
    format!(
        "WITH RECURSIVE queued_owners AS (
                 (SELECT r.owner_id, r.priority, r.run_at, r.component,
                         uuid_send(r.task_id) AS task_key
                  FROM queue_ready r
                  ORDER BY r.owner_id, r.priority DESC, r.run_at, uuid_send(r.task_id) LIMIT 1)
                 UNION ALL
                 SELECT next.* FROM queued_owners o CROSS JOIN LATERAL (
                     SELECT r.owner_id, r.priority, r.run_at, r.component,
                         uuid_send(r.task_id) AS task_key
                     FROM queue_ready r WHERE r.owner_id > o.owner_id
                     ORDER BY r.owner_id, r.priority DESC, r.run_at, uuid_send(r.task_id)
                     LIMIT 1) AS next),
               due_owners AS (
                 SELECT o.owner_id,
                     COALESCE(later.priority, o.priority) AS priority,
                     COALESCE(later.run_at, o.run_at) AS run_at,
                     COALESCE(later.task_key, o.task_key) AS task_key
                 FROM (SELECT q.*, q.run_at <= due AND q.component NOT IN
                                 (SELECT component FROM queue_component_pause) AS first_is_due
                       FROM queued_owners q WHERE q.owner_id IS NOT NULL) AS o
                 LEFT JOIN LATERAL (
                     SELECT r.priority, r.run_at, uuid_send(r.task_id) AS task_key
                     FROM queue_ready r
                     WHERE NOT o.first_is_due
                       AND r.owner_id = o.owner_id AND r.run_at <= due
                       AND r.component NOT IN (SELECT component FROM queue_component_pause)
                     ORDER BY r.priority DESC, r.run_at, uuid_send(r.task_id) LIMIT 1) AS later
                   ON true
                 WHERE o.first_is_due OR later.task_key IS NOT NULL),
               {RANKED_AND_FILLED}
               quota AS (
                 SELECT r.owner_id, d.priority, d.run_at, d.task_key,
                     f.level - r.tasks + CASE WHEN r.rank <= f.extra THEN 1 ELSE 0 END AS tasks
                 FROM ranked r JOIN due_owners d ON d.owner_id = r.owner_id, filled f
                 WHERE r.rank <= f.owners)
               SELECT t.id FROM quota q CROSS JOIN LATERAL (
                   (SELECT r.task_id FROM queue_ready r
                    WHERE r.owner_id >= q.owner_id AND r.owner_id <= q.owner_id
                      AND r.priority = q.priority
                      AND (r.run_at, uuid_send(r.task_id)) >= (q.run_at, q.task_key)
                      AND r.run_at <= due
                      AND r.component NOT IN (SELECT component FROM queue_component_pause)
                    ORDER BY r.owner_id, r.priority DESC, r.run_at, uuid_send(r.task_id)
                    LIMIT q.tasks)
                   UNION ALL
                   (SELECT r.task_id FROM queue_ready r
                    WHERE r.owner_id >= q.owner_id AND r.owner_id <= q.owner_id
                      AND r.priority < q.priority AND r.run_at <= due
                      AND r.component NOT IN (SELECT component FROM queue_component_pause)
                    ORDER BY r.owner_id, r.priority DESC, r.run_at, uuid_send(r.task_id)
                    LIMIT q.tasks)
                   LIMIT q.tasks) AS c
               JOIN queue_task t ON t.id = c.task_id
               FOR UPDATE OF t SKIP LOCKED",
        RANKED_AND_FILLED = quotas::RANKED_AND_FILLED
    )
}

/// The claim's statement planned once per connection, not at every call. PL/pgSQL plans a
/// statement for its arguments five times, then keeps a plan for any arguments only if its
/// estimated cost is no higher; this claim's is (its quotas' `LIMIT`s are unknown), so every
/// claim was planned anew: 0.7 ms of a 1.8 ms claim of 90 tasks. The generic plan reads the
/// same indexes in the same way (`EXPLAIN EXECUTE` of the prepared statement).
const GENERIC_PLAN: &str = "ALTER FUNCTION queue_claim(TIMESTAMPTZ, TEXT, BIGINT, UUID[], BIGINT[]) \
     SET plan_cache_mode = force_generic_plan";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let claim = turns::claim_choosing(&past_taken_chosen());
        let db = manager.get_connection();
        db.execute_unprepared(&claim).await?;
        db.execute_unprepared(GENERIC_PLAN).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let claim = turns::claim_choosing(&quotas::quota_chosen());
        manager.get_connection().execute_unprepared(&claim).await?;
        Ok(())
    }
}
