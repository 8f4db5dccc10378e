//! The statements whose text differs between PostgreSQL and SQLite, side by side.

use sea_orm::DbBackend;

/// PostgreSQL's claim: up to N due tasks of unpaused components, highest priority first,
/// FIFO within a priority, selected and marked started in ONE statement. The node claims
/// only as many as it has free executor slots, so it starts each at once, and the
/// SCHEDULING step is recorded in the history only (see `Store::task_get_available`).
/// `FOR UPDATE SKIP LOCKED` makes concurrent claimers on other nodes pass over tasks
/// someone else is claiming instead of waiting for them or taking them twice.
///
/// The statement calls `queue_claim` (`m20261124_000090_steady_plans`), a function that
/// carries its own planner settings, so its plan walks the claim index in order and
/// finds the tasks by their primary key whatever the statistics say (those of
/// `queue_ready` say "empty" after every vacuum of a drained queue, and a plan made then
/// read and sorted every queued task on each claim).
///
/// The order comes from `queue_ready`, the queued tasks' narrow table (kept by
/// triggers, see `m20261124_000070_ready_table`); the rows locked are the tasks', not
/// the entries': an admin's abandon of a queued task locks the task and then (its
/// trigger) deletes the entry, so a claim locking entries first and tasks second
/// could deadlock with it. The claim then deletes the claimed tasks' entries and moves
/// their counts itself, and the trigger passes over its UPDATE
/// (`m20261127_000140_counted_claims`, ADR 0007).
///
/// A task that another claim took, and committed, after this statement's snapshot
/// still has its entry in that snapshot; FOR UPDATE then locks the task's newest
/// version, EXECUTING by now, so the UPDATE tests the status again and leaves such a
/// task alone. So a claim racing another can hand out fewer than N while more are due
/// (the producer looks again `MIN_POLL` later). The test is in the UPDATE only, and no
/// index of `queue_task` names `workflow_status` (see `m20261124_000080_hot_updates`):
/// with such an index, a status test let the generic plan (statistics taken while
/// nothing was queued) read every queued task through it and join them with the
/// entries in memory, several times slower than probing the primary key for each entry
/// (ADR 0007).
///
/// Parameters: now, node id, max rows.
pub(crate) const POSTGRES_CLAIM: &str = "SELECT * FROM queue_claim($1, $2, $3)";

/// PostgreSQL's claim taking turns among owners: `queue_claim` with two more arguments
/// (`m20261129_000170_owner_turns`), the owners with tasks on the claiming node and how
/// many each. While one owner alone has queued tasks it is [`POSTGRES_CLAIM`]; otherwise
/// the owners whose first due task has the highest priority share the claim by quota, the
/// owners with the fewest tasks on the node raised to a common level, and each takes its
/// first due tasks up to its quota (`m20261207_001200_claims_by_quota`, ADR 0075, 0085).
/// The tasks come back in no order; `Store::task_get_available` puts them in turn order.
///
/// Parameters: now, node id, max rows, owner ids, their tasks on the node.
pub(crate) const POSTGRES_FAIR_CLAIM: &str =
    "SELECT * FROM queue_claim($1, $2, $3, $4::uuid[], $5::int8[])";

/// PostgreSQL's completion of a batch of claims: `queue_complete`
/// (`m20261127_000140_counted_claims`) sets what `Transition::Complete` sets on the tasks
/// still running under the claim's lease, and returns their events' columns. A function,
/// like the claim, so that it keeps the counts from its own rows and the trigger over
/// every UPDATE passes it over (ADR 0007); SQLite's completion is the UPDATE the
/// transition builds, counted by SQLite's row triggers.
///
/// Parameters: the task ids, their leases (arrays of the same length), now, node id.
pub(crate) const POSTGRES_COMPLETE: &str =
    "SELECT * FROM queue_complete($1::uuid[], $2::int8[], $3, $4)";

/// The claim's entries, in claim order: the SELECT both of [`SQLITE_CLAIM`]'s statements
/// share. Parameters: `?1` now, `?3` the most to claim.
///
/// It names the claim index: SQLite's planner (with no statistics, as a new database has)
/// may otherwise sort every queued task into a temporary B-tree for the ORDER BY, so each
/// claim would cost time in proportion to the queue's length; walking the claim index in
/// order and stopping at the LIMIT costs the same whatever the length (ADR 0010).
///
/// The LIMIT is `+?3`, not `?3`: SQLite's planner looks at the value of a bare parameter in
/// a LIMIT, which marks the statement to be compiled again whenever that parameter is bound,
/// that is on every run, and recompiling (with the triggers the claim's start compiles in)
/// cost several times the run itself (ADR 0010).
macro_rules! sqlite_claimed_entries {
    () => {
        "SELECT task_id FROM queue_ready INDEXED BY idx_queue_ready_claim \
         WHERE run_at <= ?1 \
           AND component NOT IN (SELECT component FROM queue_component_pause) \
         ORDER BY priority DESC, run_at, task_id \
         LIMIT +?3"
    };
}

/// [`SQLITE_CLAIM`]'s first statement: starts the tasks of the entries `$entries` claims
/// and returns them. The status test is a guard: an entry whose task is not QUEUED (there
/// should be none) is taken by the second statement and its task left alone, so a stale
/// entry cannot block the head of the queue.
///
/// The UPDATE names the primary key's index, `sqlite_autoindex_queue_task_1` (SQLite's name
/// for a table's first constraint-made index; were it ever renamed, every claim would fail,
/// and `sqlite_drain_statements_keep_their_plans_whatever_the_statistics` with it). Left to
/// the planner, a claim of 256 read every task once `ANALYZE` (or `PRAGMA optimize`) had
/// recorded the table while it was small (a thousand rows: 256 lookups looked dearer than
/// reading them all), and kept doing so as the table grew, so the drain ran far slower than
/// with the index named (ADR 0010).
macro_rules! sqlite_claim_start {
    ($($entries:tt)*) => {
        concat!(
            "UPDATE queue_task INDEXED BY sqlite_autoindex_queue_task_1 \
             SET workflow_status = 'EXECUTING', \
                 scheduling_started_date = ?1, execution_started_date = ?1, \
                 scheduled_by_process = ?2, modified_date = ?1, modified_by = ?2, \
                 attempt = attempt + 1, lease_version = lease_version + 1 \
             WHERE workflow_status = 'QUEUED' AND id IN (",
            $($entries)*,
            ") RETURNING *"
        )
    };
}

/// [`SQLITE_CLAIM`]'s second statement: takes the claimed entries off `queue_ready`.
///
/// The claim takes them itself rather than leaving them to the trigger that removes the
/// entry of a task leaving QUEUED (which passes over moves to EXECUTING, the claim's): a
/// DELETE in a row-level trigger cost several times what the claim's UPDATE costs without
/// it (ADR 0006).
macro_rules! sqlite_claim_take {
    ($($entries:tt)*) => {
        concat!("DELETE FROM queue_ready WHERE task_id IN (", $($entries)*, ")")
    };
}

/// SQLite's claim: up to N due tasks of unpaused components, in claim order, marked
/// started (as [`POSTGRES_CLAIM`] does) and their entries taken off `queue_ready`. Two
/// statements in one text, sent as one command inside the claim's write transaction, so a
/// claim is three round trips to the connection's thread (`BEGIN IMMEDIATE`, this,
/// `COMMIT`). SQLite has one writer: nothing else can change `queue_ready` between the two
/// statements, and the start (which changes only `queue_task`) leaves it as it was, so
/// both pick the same entries.
///
/// Why one command: each round trip to sqlx's connection thread is dear when the thread has
/// to be woken, as an idle node's is, and the commit-to-start latency of an idle node waits
/// for every one (ADR 0010). Taking the entries first and binding their ids into the start
/// was a round trip more, and one statement text per count.
///
/// Parameters: now, node id, the most to claim.
pub(crate) const SQLITE_CLAIM: &str = concat!(
    sqlite_claim_start!(sqlite_claimed_entries!()),
    "; ",
    sqlite_claim_take!(sqlite_claimed_entries!())
);

/// One owner's share of [`sqlite_quota_claim`]'s entries: its first due tasks of unpaused
/// components, in claim order, up to its quota. `{owner}` and `{quota}` are the numbers of
/// its parameters; the `+` keeps SQLite from compiling the statement again for each
/// quota's value (see [`sqlite_claimed_entries`]).
macro_rules! sqlite_owner_entries {
    () => {
        "SELECT task_id FROM (SELECT task_id FROM queue_ready INDEXED BY idx_queue_ready_owner \
         WHERE owner_id = ?{owner} AND run_at <= ?1 \
           AND component NOT IN (SELECT component FROM queue_component_pause) \
         ORDER BY priority DESC, run_at, task_id LIMIT +?{quota})"
    };
}

/// The most owners one SQLite claim takes turns among: each is a term of a compound
/// SELECT, of which SQLite allows 500. Owners beyond it (those with most tasks on the node)
/// wait for the next claim.
pub(crate) const SQLITE_MOST_OWNERS_PER_CLAIM: usize = 200;

/// [`SQLITE_CLAIM`] taking turns among `owners` owners (ADR 0085): each owner's first due
/// tasks up to its quota (`store::quotas`), the owners' shares joined by `UNION ALL`, each
/// read from the owner index in its order, so nothing is sorted. One text per number of
/// owners, which sqlx keeps prepared like any other.
///
/// Parameters: now, node id, then each owner's id and quota (`?3` and `?4` for the first).
pub(crate) fn sqlite_quota_claim(owners: usize) -> String {
    let entries = (0..owners)
        .map(|n| {
            format!(
                sqlite_owner_entries!(),
                owner = 3 + 2 * n,
                quota = 4 + 2 * n
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    format!(
        concat!(
            sqlite_claim_start!("{entries}"),
            "; ",
            sqlite_claim_take!("{entries}")
        ),
        entries = entries
    )
}

/// The claims' statements one by one, for their plans.
#[cfg(all(test, feature = "testing"))]
const SQLITE_CLAIM_STEPS: [(&str, &str); 2] = [
    (
        "claim's start",
        sqlite_claim_start!(sqlite_claimed_entries!()),
    ),
    (
        "claim's take",
        sqlite_claim_take!(sqlite_claimed_entries!()),
    ),
];

/// The owners with queued tasks, each with its first due task of an unpaused component in
/// claim order, its priority (the highest among them) and `run_at` (`NULL` for an owner
/// whose queued tasks are all for later): what a node whose slots are all busy looks at to
/// let owners take turns (`runtime::turns`), and what SQLite's claim taking turns splits
/// among (`store::quotas`). One probe of the owner index per owner with queued tasks, and
/// two for its first due task.
///
/// Parameters: now.
pub(crate) fn owners_waiting(backend: DbBackend) -> &'static str {
    // A column of the owner's first due task of an unpaused component, in claim order.
    macro_rules! first_due {
        ($column:literal, $owner_index:literal, $now:literal) => {
            concat!(
                "(SELECT due.",
                $column,
                " FROM queue_ready due ",
                $owner_index,
                " \
                  WHERE due.owner_id = o.owner_id AND due.run_at <= ",
                $now,
                " \
                    AND due.component NOT IN (SELECT component FROM queue_component_pause) \
                  ORDER BY due.priority DESC, due.run_at LIMIT 1)"
            )
        };
    }
    macro_rules! owners_waiting {
        ($owner_index:literal, $now:literal) => {
            concat!(
                "WITH RECURSIVE queued_owners(owner_id) AS ( \
                     SELECT (SELECT first.owner_id FROM queue_ready first ", $owner_index, " \
                             ORDER BY first.owner_id LIMIT 1) \
                     UNION ALL \
                     SELECT (SELECT next.owner_id FROM queue_ready next ", $owner_index, " \
                             WHERE next.owner_id > o.owner_id ORDER BY next.owner_id LIMIT 1) \
                     FROM queued_owners o WHERE o.owner_id IS NOT NULL) \
                 SELECT o.owner_id AS owner_id, ",
                first_due!("priority", $owner_index, $now), " AS priority, ",
                first_due!("run_at", $owner_index, $now), " AS first_due \
                 FROM queued_owners o WHERE o.owner_id IS NOT NULL"
            )
        };
    }
    match backend {
        DbBackend::Postgres => owners_waiting!("", "$1"),
        _ => owners_waiting!("INDEXED BY idx_queue_ready_owner", "?1"),
    }
}

/// The earliest `run_at` of a queued task of an unpaused component: when the producer, idle,
/// must look again. `MIN(run_at)` over the queued tasks read every one of them (no index
/// leads with `run_at`) on every idle wake-up, so an idle node's wake-up cost time in
/// proportion to the tasks scheduled for later (ADR 0006). The claim index is ordered by
/// priority, then `run_at`: its first entry within each priority is that priority's earliest
/// task. So the statement skips from priority to priority down the index (a recursive CTE,
/// one probe per distinct priority) and takes the least of those first entries. SQLite is
/// told the index by name, as in [`SQLITE_CLAIM`].
///
/// No parameters.
pub(crate) fn task_next_run_at(backend: DbBackend) -> &'static str {
    // The one text, with the backend's hint (or none) after each `queue_ready t`, made at
    // compile time: the producer asks whenever it goes idle.
    macro_rules! next_run_at {
        ($claim_index:literal) => {
            concat!(
                "WITH RECURSIVE priorities(priority) AS ( \
                     SELECT (SELECT t.priority FROM queue_ready t ", $claim_index, " \
                             ORDER BY t.priority DESC LIMIT 1) \
                     UNION ALL \
                     SELECT (SELECT t.priority FROM queue_ready t ", $claim_index, " \
                             WHERE t.priority < p.priority \
                             ORDER BY t.priority DESC LIMIT 1) \
                     FROM priorities p WHERE p.priority IS NOT NULL) \
                 SELECT MIN((SELECT t.run_at FROM queue_ready t ", $claim_index, " \
                             WHERE t.priority = p.priority \
                               AND t.component NOT IN (SELECT component FROM queue_component_pause) \
                             ORDER BY t.run_at LIMIT 1)) AS run_at \
                 FROM priorities p WHERE p.priority IS NOT NULL"
            )
        };
    }
    match backend {
        DbBackend::Postgres => next_run_at!(""),
        _ => next_run_at!("INDEXED BY idx_queue_ready_claim"),
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use chrono::Utc;
    use sea_orm::{ConnectionTrait, DbBackend, Statement};

    use crate::schema::QueueMigrator;
    use crate::store::Store;
    use crate::task::NewTask;
    use crate::testing::{Backend, TestDatabase};

    /// SQLite's plans of the statements a drain repeats, one line per step: the claim's two
    /// steps and the next `run_at` must walk the claim index in order and stop at the
    /// LIMIT, and the claim's start and the completion must find their tasks by primary
    /// key, not read them all, so that each costs the same however many tasks there are.
    /// That must hold whatever the statistics say: none yet; taken by `ANALYZE` (or
    /// `PRAGMA optimize`) while the database was young, a thousand finished tasks and none
    /// queued; and taken with thousands queued. With the young database's statistics the
    /// claim's start, left to the planner, read every task: SQLite reckoned 256 lookups
    /// dearer than reading the thousand rows the statistics promised, and the drain slowed
    /// (ADR 0010).
    #[tokio::test]
    async fn sqlite_drain_statements_keep_their_plans_whatever_the_statistics() {
        let db = TestDatabase::create::<QueueMigrator>(Backend::Sqlite)
            .await
            .expect("SQLite is always available");
        let store = Store::new(db.conn.clone());
        let enqueue = |count: usize| {
            (0..count)
                .map(|n: usize| {
                    // Three owners, so the claim has turns to take.
                    let owner = uuid::Uuid::from_u128(n as u128 % 3);
                    NewTask::new("test.plan", serde_json::json!({}), owner)
                })
                .collect()
        };
        store
            .enqueue_many(store.db(), enqueue(1_000))
            .await
            .unwrap();
        db.conn
            .execute_unprepared(
                "UPDATE queue_task SET workflow_status = 'COMPLETED', \
                 workflow_stopped_date = created_date",
            )
            .await
            .unwrap();
        // (statistics, tasks to queue first, whether ANALYZE then records them)
        let states = [
            ("none", 0, false),
            ("of a young database", 0, true),
            ("taken with 3,000 queued", 3_000, true),
        ];
        for (statistics, queue_first, analyze) in states {
            if queue_first > 0 {
                store
                    .enqueue_many(store.db(), enqueue(queue_first))
                    .await
                    .unwrap();
            }
            if analyze {
                db.conn.execute_unprepared("ANALYZE").await.unwrap();
            }
            // (name, statement, whether it walks the claim order)
            let claim = super::SQLITE_CLAIM_STEPS.map(|(name, sql)| {
                let values = [Utc::now().into(), "plan-node".into(), 256_i64.into()];
                let statement = Statement::from_sql_and_values(DbBackend::Sqlite, sql, values);
                (name, statement, true)
            });
            // The claim taking turns among the three owners, 100 tasks each, step by step.
            let mut values = vec![Utc::now().into(), "plan-node".into()];
            for owner in 0..3 {
                values.extend([uuid::Uuid::from_u128(owner).into(), 100_i64.into()]);
            }
            let quota_claim = super::sqlite_quota_claim(3);
            let quota_steps = ["fair claim's start", "fair claim's take"]
                .into_iter()
                .zip(quota_claim.split("; "))
                .map(|(name, sql)| {
                    let statement =
                        Statement::from_sql_and_values(DbBackend::Sqlite, sql, values.clone());
                    (name, statement, false)
                });
            let next_run_at = Statement::from_string(
                DbBackend::Sqlite,
                super::task_next_run_at(DbBackend::Sqlite),
            );
            let claims = (0..256).map(|lease| (uuid::Uuid::now_v7(), lease));
            let completion = store.completion(claims, Utc::now(), "plan-node");
            let statements = claim.into_iter().chain(quota_steps).chain([
                ("next run_at", next_run_at, true),
                ("completion", completion, false),
            ]);
            for (name, statement, ordered) in statements {
                let plan = plan(&db, statement).await;
                let steps = plan.join("\n");
                assert!(
                    !ordered || steps.contains("USING INDEX idx_queue_ready_claim"),
                    "with statistics {statistics}, the {name} does not walk the claim \
                     index:\n{steps}"
                );
                assert!(
                    !steps.contains("TEMP B-TREE"),
                    "with statistics {statistics}, the {name} sorts:\n{steps}"
                );
                // Taking turns, each owner's share is walked in its own order.
                let owner_walks = steps
                    .matches("queue_ready USING INDEX idx_queue_ready_owner (owner_id=?)")
                    .count();
                assert!(
                    !name.starts_with("fair") || owner_walks == 3,
                    "with statistics {statistics}, the {name} does not walk each owner's \
                     entries in the owner index:\n{steps}"
                );
                // Tasks and entries are only ever looked up, or walked in claim order.
                let reads_all = plan.iter().find(|step| {
                    let scanned = step.strip_prefix("SCAN ").unwrap_or_default();
                    let tables = ["queue_task", "queue_ready"];
                    tables.contains(&scanned.split(' ').next().unwrap_or_default())
                        && scanned != "queue_ready USING INDEX idx_queue_ready_claim"
                });
                assert!(
                    reads_all.is_none(),
                    "with statistics {statistics}, the {name} reads every task or entry:\n{steps}"
                );
            }
        }
    }

    async fn plan(db: &TestDatabase, statement: Statement) -> Vec<String> {
        let explain = Statement {
            sql: format!("EXPLAIN QUERY PLAN {}", statement.sql),
            ..statement
        };
        db.conn
            .query_all_raw(explain)
            .await
            .unwrap()
            .iter()
            .map(|row| row.try_get::<String>("", "detail").unwrap())
            .collect()
    }
}
