//! PostgreSQL: the claim taking turns gives each owner a quota instead of sorting turns.
//!
//! `m20261129_000170_owner_turns` chose a claim's tasks by reading each owner's first due
//! tasks, numbering them (a sort per owner) and sorting all of them by priority, turn and
//! age for the LIMIT. In a drain of ten owners' short tasks that doubled the claim's time
//! beside the strict order's, and the drain ran at about three quarters of its rate
//! (ADR 0085). The same choice needs no sort of tasks: the turns fill up like water. Among
//! the owners whose first due task has the highest priority, those with the fewest tasks on
//! the claiming node are raised to a common level, and each owner's quota is that level less
//! its tasks on the node, so the quotas add up to what the node asked for; each owner's
//! first tasks up to its quota are then read straight from the owner index. Only the owners
//! (one row each) are sorted.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use super::m20261129_000170_owner_turns as turns;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The owners of `due_owners` (`owner_id`, `priority`, `run_at` of its first due task) that a
/// claim of `wanted` tasks reaches, as the quota's CTEs `held`, `ranked` and `filled`; a claim
/// taking turns by quota goes on with `quota` (see [`quota_chosen`]).
pub(super) const RANKED_AND_FILLED: &str =
    "held AS (SELECT * FROM unnest(owners, running) AS held (owner_id, tasks)),
               ranked AS (
                 SELECT d.owner_id, d.tasks, row_number() OVER w AS rank,
                     CAST(sum(d.tasks) OVER w AS BIGINT) AS below
                 FROM (SELECT d.owner_id, d.run_at, COALESCE(h.tasks, 0) AS tasks
                       FROM due_owners d LEFT JOIN held h ON h.owner_id = d.owner_id
                       WHERE d.priority = (SELECT max(priority) FROM due_owners)) AS d
                 WINDOW w AS (ORDER BY d.tasks, d.run_at, d.owner_id)),
               filled AS (
                 SELECT rank AS owners, (wanted + below) / rank AS level,
                     (wanted + below) % rank AS extra
                 FROM ranked WHERE rank * tasks - below < wanted
                 ORDER BY rank DESC LIMIT 1),";

/// The tasks the claim takes while more than one owner has queued tasks (locked, in no
/// order: the node puts them in turn order, `store::claim::in_turn_order`).
///
/// - `due_owners`: every owner with queued entries (one probe of the owner index each) and
///   its first due task of an unpaused component (one more), in claim order: that task's
///   priority and age.
/// - `ranked`: the owners whose first due task has the highest priority, fewest tasks on the
///   node first (`running` of the same place in `owners`; none if absent), then oldest
///   first task, with the tasks on the node of those before them and itself (`below`).
/// - `filled`: the most owners the water reaches (the first `rank` owners, raised to the
///   `rank`-th's tasks, take fewer than `wanted`), the level they rise to, and the tasks
///   left over when `wanted` does not divide evenly: one more each for the first owners.
/// - `quota`: each reached owner's level less its tasks on the node.
///
/// An owner with fewer due tasks than its quota gives the claim fewer tasks than asked; an
/// owner's quota may take its tasks of a lower priority after its highest (an owner's own
/// order is priority, then age), which a strict claim of several owners could do as well.
pub(super) fn quota_chosen() -> String {
    format!(
        "{QUEUED_OWNERS}
               due_owners AS (
                 SELECT o.owner_id, first_due.priority, first_due.run_at
                 FROM queued_owners o CROSS JOIN LATERAL (
                     SELECT r.priority, r.run_at FROM queue_ready r
                     WHERE r.owner_id = o.owner_id AND r.run_at <= due
                       AND r.component NOT IN (SELECT component FROM queue_component_pause)
                     ORDER BY r.priority DESC, r.run_at LIMIT 1) AS first_due
                 WHERE o.owner_id IS NOT NULL),
               {RANKED_AND_FILLED}
               quota AS (
                 SELECT r.owner_id,
                     f.level - r.tasks + CASE WHEN r.rank <= f.extra THEN 1 ELSE 0 END AS tasks
                 FROM ranked r, filled f WHERE r.rank <= f.owners)
               SELECT t.id FROM quota q CROSS JOIN LATERAL (
                   SELECT r.task_id FROM queue_ready r
                   WHERE r.owner_id = q.owner_id AND r.run_at <= due
                     AND r.component NOT IN (SELECT component FROM queue_component_pause)
                   ORDER BY r.priority DESC, r.run_at, uuid_send(r.task_id)
                   LIMIT q.tasks) AS c
               JOIN queue_task t ON t.id = c.task_id
               FOR UPDATE OF t SKIP LOCKED",
        QUEUED_OWNERS = turns::QUEUED_OWNERS,
        RANKED_AND_FILLED = RANKED_AND_FILLED
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let claim = turns::claim_choosing(&quota_chosen());
        manager.get_connection().execute_unprepared(&claim).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let claim = turns::claim();
        manager.get_connection().execute_unprepared(&claim).await?;
        Ok(())
    }
}
