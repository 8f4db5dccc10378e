//! The statements whose text differs between PostgreSQL and SQLite, side by side.

use sea_orm::DbBackend;

/// Claims up to N due tasks of unpaused components, highest priority first, FIFO within a
/// priority, in ONE statement that selects them and marks them started: the node claims
/// only as many as it has free executor slots, so it starts each at once, and the
/// SCHEDULING step is recorded in the history only (see `Store::task_get_available`).
///
/// PostgreSQL: `FOR UPDATE SKIP LOCKED` makes concurrent claimers on other nodes pass over
/// rows someone else is claiming instead of waiting for them or taking them twice.
/// SQLite: the database has one writer at a time, so the inner SELECT and the UPDATE cannot
/// interleave with another claim.
///
/// Parameters: now, node id, max rows.
pub(crate) fn task_get_available(backend: DbBackend) -> &'static str {
    match backend {
        // A materialized CTE is evaluated exactly once; as an `IN (subquery)` the planner
        // may re-run the locking subquery and claim more than `LIMIT` rows.
        //
        // The UPDATE finds the picked rows by primary key only. They are locked, and FOR
        // UPDATE re-checks `workflow_status = 'QUEUED'` on the version it locks, so they are
        // QUEUED until this transaction ends. Repeating that test in the UPDATE's WHERE
        // (as an earlier version did) offered the planner the partial claim index for the
        // join: with statistics taken while nothing was queued (a table of finished tasks,
        // then a burst of new ones) it walked every queued entry once per claim, 82 ms for
        // 16 tasks with 18,000 queued, and a drain over a million retained tasks ran at a
        // seventh of its fresh-table rate.
        //
        // `id = ANY(ARRAY(…))` rather than a join with `picked`: the statement is prepared,
        // and PostgreSQL's generic plan, which knows neither the LIMIT nor the table's size
        // at run time, joined the picked ids by hashing the whole table (a sequential scan
        // of every task per claim, 15 of a 256-task claim's 17 ms on 20,000 rows). An
        // array parameter's length is estimated small, so the ids are always looked up in
        // the primary key.
        DbBackend::Postgres => {
            "WITH picked AS MATERIALIZED ( \
                 SELECT id FROM queue_task \
                 WHERE workflow_status = 'QUEUED' AND run_at <= $1 \
                   AND execution_component_name NOT IN (SELECT component FROM queue_component_pause) \
                 ORDER BY priority DESC, run_at, id \
                 LIMIT $3 \
                 FOR UPDATE SKIP LOCKED) \
             UPDATE queue_task SET workflow_status = 'EXECUTING', \
                 scheduling_started_date = $1, execution_started_date = $1, scheduled_by_process = $2, \
                 modified_date = $1, modified_by = $2, \
                 attempt = queue_task.attempt + 1, lease_version = queue_task.lease_version + 1 \
             WHERE queue_task.id = ANY(ARRAY(SELECT id FROM picked)) \
             RETURNING queue_task.*"
        }
        // The picking SELECT names the claim index: SQLite's planner (with no statistics,
        // as a new database has) preferred the equality on `idx_queue_task_status_component`
        // and then sorted every queued task into a temporary B-tree for the ORDER BY, so
        // each claim cost time in proportion to the queue's length (a claim of 256 took
        // 40–80 ms with 60,000 queued; walking the claim index in order and stopping at the
        // LIMIT, about 10 ms whatever the length, the UPDATE included). The UPDATE's own
        // status test carries a unary `+`, which leaves the value alone but keeps the
        // planner off that index, so the picked rows are found by primary key instead of by
        // walking every queued task's entry (the test itself is a guard: SQLite's one
        // writer means the picked rows are still QUEUED).
        _ => {
            "UPDATE queue_task SET workflow_status = 'EXECUTING', \
                 scheduling_started_date = ?1, execution_started_date = ?1, scheduled_by_process = ?2, \
                 modified_date = ?1, modified_by = ?2, \
                 attempt = attempt + 1, lease_version = lease_version + 1 \
             WHERE +workflow_status = 'QUEUED' AND id IN ( \
                 SELECT id FROM queue_task INDEXED BY idx_queue_task_claim \
                 WHERE workflow_status = 'QUEUED' AND run_at <= ?1 \
                   AND execution_component_name NOT IN (SELECT component FROM queue_component_pause) \
                 ORDER BY priority DESC, run_at, id \
                 LIMIT ?3) \
             RETURNING *"
        }
    }
}

/// The earliest `run_at` of a queued task of an unpaused component: when the producer, idle,
/// must look again. `MIN(run_at)` over the queued tasks read every one of them (no index
/// leads with `run_at`), 20–35 ms on PostgreSQL and 150 ms on SQLite with 100,000 tasks
/// scheduled for later, on every idle wake-up. The claim index is ordered by priority, then
/// `run_at`: its first entry within each priority is that priority's earliest task. So the
/// statement skips from priority to priority down the index (a recursive CTE, one probe per
/// distinct priority) and takes the least of those first entries, under a millisecond. The
/// literal status matches the partial index even in a generic plan; SQLite is told the
/// index by name, as in [`task_get_available`], or it reads every queued task by status.
///
/// No parameters.
pub(crate) fn task_next_run_at(backend: DbBackend) -> &'static str {
    // The one text, with the backend's hint (or none) after each `queue_task t`, made at
    // compile time: the producer asks whenever it goes idle.
    macro_rules! next_run_at {
        ($claim_index:literal) => {
            concat!(
                "WITH RECURSIVE priorities(priority) AS ( \
                     SELECT (SELECT t.priority FROM queue_task t ", $claim_index, " \
                             WHERE t.workflow_status = 'QUEUED' ORDER BY t.priority DESC LIMIT 1) \
                     UNION ALL \
                     SELECT (SELECT t.priority FROM queue_task t ", $claim_index, " \
                             WHERE t.workflow_status = 'QUEUED' AND t.priority < p.priority \
                             ORDER BY t.priority DESC LIMIT 1) \
                     FROM priorities p WHERE p.priority IS NOT NULL) \
                 SELECT MIN((SELECT t.run_at FROM queue_task t ", $claim_index, " \
                             WHERE t.workflow_status = 'QUEUED' AND t.priority = p.priority \
                               AND t.execution_component_name NOT IN (SELECT component FROM queue_component_pause) \
                             ORDER BY t.run_at LIMIT 1)) AS run_at \
                 FROM priorities p WHERE p.priority IS NOT NULL"
            )
        };
    }
    match backend {
        DbBackend::Postgres => next_run_at!(""),
        _ => next_run_at!("INDEXED BY idx_queue_task_claim"),
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

    /// SQLite's plans of the claim and of the next `run_at`, one line per step: they must
    /// walk the claim index in order and stop at the LIMIT (the claim finding the picked
    /// rows by primary key), whatever the statistics say (none yet, then taken with
    /// thousands of tasks queued), so that they cost the same however long the queue is.
    #[tokio::test]
    async fn sqlite_claim_statements_walk_the_claim_index() {
        let db = TestDatabase::create::<QueueMigrator>(Backend::Sqlite)
            .await
            .expect("SQLite is always available");
        let store = Store::new(db.conn.clone());
        let tasks = (0..3_000)
            .map(|_| NewTask::new("test.plan", serde_json::json!({}), uuid::Uuid::nil()))
            .collect();
        store.enqueue_many(store.db(), tasks).await.unwrap();
        for statistics in ["none", "from ANALYZE"] {
            if statistics == "from ANALYZE" {
                db.conn.execute_unprepared("ANALYZE").await.unwrap();
            }
            let claim = Statement::from_sql_and_values(
                DbBackend::Sqlite,
                super::task_get_available(DbBackend::Sqlite),
                [Utc::now().into(), "plan-node".into(), 256_i64.into()],
            );
            let next_run_at = Statement::from_string(
                DbBackend::Sqlite,
                super::task_next_run_at(DbBackend::Sqlite),
            );
            for (name, statement) in [("claim", claim), ("next run_at", next_run_at)] {
                let plan = plan(&db, statement).await;
                let steps = plan.join("\n");
                assert!(
                    plan.iter()
                        .any(|step| step.contains("USING INDEX idx_queue_task_claim")),
                    "with statistics {statistics}, the {name} does not walk the claim \
                     index:\n{steps}"
                );
                assert!(
                    !steps.contains("TEMP B-TREE") && !steps.contains("status_component"),
                    "with statistics {statistics}, the {name} sorts or reads queued tasks by \
                     status:\n{steps}"
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
