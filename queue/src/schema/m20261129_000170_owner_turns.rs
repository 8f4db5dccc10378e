//! `queue_ready` learns whose each queued task is (`owner_id`, kept by the same triggers as
//! the rest of the entry), so a claim can take turns among owners: within a priority, each
//! owner's next task in the order of how few tasks that owner runs on the claiming node,
//! instead of strictly oldest first, where one owner's backlog held every slot (ADR 0075).
//!
//! - `idx_queue_ready_owner (owner_id, priority DESC, run_at, task_id)`: the owners with
//!   queued work, one probe each (a skip scan), and each owner's tasks in claim order.
//! - PostgreSQL: `queue_claim(due, node, wanted, owners, running)`, the fair claim, beside
//!   the three-argument one, which an older node still calls during a rolling deploy (and
//!   which keeps working: the triggers fill `owner_id` whoever enqueues).
//! - SQLite: the two triggers that write entries write the owner too.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use super::m20261124_000060_task_counts as counts;
use super::m20261124_000070_ready_table as ready;
use super::m20261124_000090_steady_plans as steady;
use super::m20261127_000140_counted_claims as counted;
use super::m20261128_000160_derived_columns_kept_by_triggers as derived;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// PostgreSQL: no task changes between the backfill and the commit that puts the new
/// trigger function in force.
const POSTGRES_LOCK: &str = "LOCK TABLE queue_task IN SHARE ROW EXCLUSIVE MODE";

const ADD_OWNER: [(DatabaseBackend, &str); 2] = [
    (
        DatabaseBackend::Postgres,
        "ALTER TABLE queue_ready ADD COLUMN owner_id UUID",
    ),
    (
        DatabaseBackend::Sqlite,
        "ALTER TABLE queue_ready ADD COLUMN owner_id BLOB",
    ),
];

const BACKFILL: &str = "UPDATE queue_ready SET owner_id = \
     (SELECT t.owner_id FROM queue_task t WHERE t.id = queue_ready.task_id)";

/// Each owner's entries in claim order; on PostgreSQL ending in the id's bytes, as the
/// claim index does, so a lookup by `task_id` keeps to the primary key (ADR 0008).
const OWNER_INDEX: [(DatabaseBackend, &str); 2] = [
    (
        DatabaseBackend::Postgres,
        "CREATE INDEX idx_queue_ready_owner \
         ON queue_ready (owner_id, priority DESC, run_at, uuid_send(task_id))",
    ),
    (
        DatabaseBackend::Sqlite,
        "CREATE INDEX idx_queue_ready_owner ON queue_ready (owner_id, priority DESC, run_at, task_id)",
    ),
];

/// PostgreSQL's entries of inserted queued tasks, with their owner.
const POSTGRES_ON_INSERT: &str =
    "INSERT INTO queue_ready (task_id, priority, run_at, component, owner_id)
                SELECT id, priority, run_at, execution_component_name, owner_id FROM new_rows
                WHERE workflow_status = 'QUEUED';";

/// PostgreSQL's upsert of queued tasks' entries after an UPDATE, with their owner.
const POSTGRES_UPSERT: &str =
    "INSERT INTO queue_ready AS r (task_id, priority, run_at, component, owner_id)
                SELECT id, priority, run_at, execution_component_name, owner_id FROM new_rows
                WHERE workflow_status = 'QUEUED'
                ON CONFLICT (task_id) DO UPDATE SET priority = excluded.priority,
                    run_at = excluded.run_at, component = excluded.component;";

/// The statement trigger's function as `m20261128_000160_derived_columns_kept_by_triggers`
/// left it, with `on_insert` and `upsert` writing the entries.
fn trigger_function(on_insert: &str, upsert: &str) -> String {
    counts::postgres_function_after(
        counted::SKIP_COUNTED,
        on_insert,
        &format!(
            "{}{}",
            steady::on_update_upserting(upsert),
            derived::set_after_update()
        ),
        steady::ON_DELETE,
    )
}

/// The claim taking turns (`dialect::POSTGRES_FAIR_CLAIM` calls it), with the three-argument
/// claim's planner settings and without JIT: its turns must be sorted, and with sorts priced
/// out their cost passed JIT's threshold, so every claim compiled itself first, which took
/// two seconds where the claim took a millisecond. While one owner alone
/// has queued tasks (the least and the greatest owner of the owner index are the same, two
/// probes) it is the three-argument claim; otherwise it chooses among each owner's first
/// `wanted` due tasks by priority, then turn, then age (see [`postgres_turns`]). `owners`
/// and `running` (arrays of the same length) say how many tasks each owner has on the
/// claiming node.
pub(super) fn claim() -> String {
    let turns = postgres_turns();
    claim_choosing(&format!(
        "SELECT t.id FROM ({turns}) AS turns JOIN queue_task t ON t.id = turns.task_id
                 ORDER BY turns.priority DESC, turns.turn, turns.run_at, uuid_send(turns.task_id)
                 LIMIT wanted
                 FOR UPDATE OF t SKIP LOCKED"
    ))
}

/// The five-argument claim, starting the tasks `chosen` selects (and locks) while more than
/// one owner has queued tasks: this migration's turns, or a later migration's.
pub(super) fn claim_choosing(chosen: &str) -> String {
    format!(
        "CREATE OR REPLACE FUNCTION queue_claim( \
             due TIMESTAMPTZ, node TEXT, wanted BIGINT, owners UUID[], running BIGINT[]) \
         RETURNS SETOF queue_task LANGUAGE plpgsql \
         SET enable_seqscan = off SET enable_sort = off SET jit = off AS $$
         BEGIN
           IF (SELECT owner_id FROM queue_ready ORDER BY owner_id LIMIT 1) IS NOT DISTINCT FROM
              (SELECT owner_id FROM queue_ready ORDER BY owner_id DESC LIMIT 1) THEN
             RETURN QUERY SELECT * FROM queue_claim(due, node, wanted);
             RETURN;
           END IF;
           {counting}
           RETURN QUERY
           WITH claimed AS (
             UPDATE queue_task SET workflow_status = 'EXECUTING',
                 scheduling_started_date = due, execution_started_date = due,
                 scheduled_by_process = node, modified_date = due, modified_by = node,
                 attempt = queue_task.attempt + 1, lease_version = queue_task.lease_version + 1
             WHERE queue_task.id = ANY(ARRAY(
                 {chosen}))
               AND queue_task.workflow_status = 'QUEUED'
             RETURNING queue_task.*),
           taken AS (
             DELETE FROM queue_ready WHERE task_id = ANY(ARRAY(SELECT id FROM claimed))),
           counted AS ({moved})
           SELECT * FROM claimed;
           {done}
         END $$",
        counting = counted::COUNTING,
        done = counted::COUNTING_DONE,
        moved = counted::moved_counts("claimed", "QUEUED", "EXECUTING"),
    )
}

/// PostgreSQL's turns: every owner with queued entries (one probe of the owner index each),
/// those with due tasks of unpaused components, a share of `wanted` for each (an even share
/// and one more), each one's first due tasks up to its share, and each task's turn, the
/// owner's tasks on the node plus the task's place among the owner's at its priority. The
/// shares bound the tasks sorted to about `wanted`, whatever the number of owners; when
/// owners have fewer due tasks than their shares the claim takes fewer, and the node claims
/// again for the rest.
fn postgres_turns() -> String {
    format!(
        "{QUEUED_OWNERS}
               due_owners AS (
                 SELECT o.owner_id FROM queued_owners o
                 WHERE o.owner_id IS NOT NULL AND EXISTS (
                     SELECT 1 FROM queue_ready r
                     WHERE r.owner_id = o.owner_id AND r.run_at <= due
                       AND r.component NOT IN (SELECT component FROM queue_component_pause))),
               share AS (
                 SELECT (wanted + COUNT(*) - 1) / GREATEST(COUNT(*), 1) + 1 AS tasks
                 FROM due_owners),
               held AS (SELECT * FROM unnest(owners, running) AS held (owner_id, tasks))
               SELECT c.task_id, c.priority, c.run_at,
                   row_number() OVER (PARTITION BY c.owner_id, c.priority
                                      ORDER BY c.run_at, uuid_send(c.task_id))
                   + COALESCE((SELECT h.tasks FROM held h WHERE h.owner_id = c.owner_id), 0)
                   AS turn
               FROM due_owners o CROSS JOIN LATERAL (
                   SELECT r.task_id, r.priority, r.run_at, r.owner_id FROM queue_ready r
                   WHERE r.owner_id = o.owner_id AND r.run_at <= due
                     AND r.component NOT IN (SELECT component FROM queue_component_pause)
                   ORDER BY r.priority DESC, r.run_at, uuid_send(r.task_id)
                   LIMIT (SELECT tasks FROM share)) AS c"
    )
}

/// The owners with queued entries, one probe of the owner index each (a skip scan): the
/// first CTE of a claim taking turns.
pub(super) const QUEUED_OWNERS: &str = "WITH RECURSIVE queued_owners(owner_id) AS (
                 SELECT (SELECT r.owner_id FROM queue_ready r ORDER BY r.owner_id LIMIT 1)
                 UNION ALL
                 SELECT (SELECT r.owner_id FROM queue_ready r WHERE r.owner_id > o.owner_id
                         ORDER BY r.owner_id LIMIT 1)
                 FROM queued_owners o WHERE o.owner_id IS NOT NULL),";

/// SQLite's triggers writing entries, with the owner (`m20261124_000070_ready_table`'s
/// otherwise).
const SQLITE_WRITERS: [&str; 2] = [
    "CREATE TRIGGER queue_task_ready_insert AFTER INSERT ON queue_task \
     WHEN NEW.workflow_status = 'QUEUED' BEGIN \
       INSERT INTO queue_ready (task_id, priority, run_at, component, owner_id) \
       VALUES (NEW.id, NEW.priority, NEW.run_at, NEW.execution_component_name, NEW.owner_id); \
     END",
    "CREATE TRIGGER queue_task_ready_requeue \
     AFTER UPDATE OF workflow_status, run_at, priority, execution_component_name ON queue_task \
     WHEN NEW.workflow_status = 'QUEUED' BEGIN \
       INSERT OR REPLACE INTO queue_ready (task_id, priority, run_at, component, owner_id) \
       VALUES (NEW.id, NEW.priority, NEW.run_at, NEW.execution_component_name, NEW.owner_id); \
     END",
];

const SQLITE_DROP_WRITERS: [&str; 2] = [
    "DROP TRIGGER queue_task_ready_insert",
    "DROP TRIGGER queue_task_ready_requeue",
];

fn for_backend<'a>(statements: &[(DatabaseBackend, &'a str)], backend: DatabaseBackend) -> &'a str {
    statements
        .iter()
        .find(|(of, _)| *of == backend)
        .map_or("", |(_, sql)| sql)
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let function = trigger_function(POSTGRES_ON_INSERT, POSTGRES_UPSERT);
        let claim = claim();
        let statements: Vec<&str> = match backend {
            DatabaseBackend::Postgres => vec![
                POSTGRES_LOCK,
                for_backend(&ADD_OWNER, backend),
                BACKFILL,
                "ALTER TABLE queue_ready ALTER COLUMN owner_id SET NOT NULL",
                for_backend(&OWNER_INDEX, backend),
                &function,
                steady::TRIGGER_FUNCTION_SETTINGS,
                &claim,
            ],
            // The writers go first and come back once the column they write exists.
            _ => SQLITE_DROP_WRITERS
                .into_iter()
                .chain([
                    for_backend(&ADD_OWNER, backend),
                    BACKFILL,
                    for_backend(&OWNER_INDEX, backend),
                ])
                .chain(SQLITE_WRITERS)
                .collect(),
        };
        let db = manager.get_connection();
        for sql in statements {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let function = trigger_function(
            ready::POSTGRES_READY_ON_INSERT,
            ready::POSTGRES_READY_UPSERT,
        );
        let statements: Vec<&str> = match backend {
            DatabaseBackend::Postgres => vec![
                "DROP FUNCTION queue_claim(TIMESTAMPTZ, TEXT, BIGINT, UUID[], BIGINT[])",
                &function,
                steady::TRIGGER_FUNCTION_SETTINGS,
                "DROP INDEX idx_queue_ready_owner",
                "ALTER TABLE queue_ready DROP COLUMN owner_id",
            ],
            _ => SQLITE_DROP_WRITERS
                .into_iter()
                .chain(ready::SQLITE_TRIGGERS[..2].iter().copied())
                .chain([
                    "DROP INDEX idx_queue_ready_owner",
                    "ALTER TABLE queue_ready DROP COLUMN owner_id",
                ])
                .collect(),
        };
        let db = manager.get_connection();
        for sql in statements {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
