//! Claiming: exactly once under concurrency, never before run_at, by priority then FIFO,
//! and not for paused components.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use queue::testing::{self, Backend, TestDatabase};
use queue::{
    ManualClock, Registry, Runtime, Store, TaskGetAvailableParams, TaskStatus, WriteClass,
};
use sea_orm::ConnectionTrait;

use super::{EffectExecutor, new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    concurrent_nodes_run_every_task_exactly_once,
    prefetching_nodes_run_every_task_exactly_once,
    run_at_is_never_early,
    a_cancelled_future_task_leaves_the_next_one_due,
    claims_by_priority_then_fifo,
    paused_components_are_not_claimed,
    only_a_person_resuming_counts_as_people_writing,
    a_submission_of_bulk_work_is_people_writing_for_seconds,
    the_next_run_at_is_the_earliest_unpaused_task_of_any_priority,
    no_index_of_a_task_changes_when_it_is_claimed_or_completed,
);

async fn concurrent_nodes_run_every_task_exactly_once(db: TestDatabase) {
    // 8 workers in all. PostgreSQL: 4 nodes with separate pools, as separate processes
    // would have. SQLite: 2 nodes sharing one store, since SQLite has one writer anyway.
    let nodes = match db.backend {
        Backend::Sqlite => 2,
        Backend::Postgres => 4,
    };
    race(db, 1500, nodes, 4, 0).await;
}

/// Nodes that hold claimed tasks beyond their free slots (`RuntimeConfig::prefetch`) race
/// the same way.
async fn prefetching_nodes_run_every_task_exactly_once(db: TestDatabase) {
    race(db, 1000, 3, 4, 40).await;
}

/// How long a racing node may go without a heartbeat before the others rescue its tasks:
/// far beyond any stall of a loaded machine (see `race`).
const RACE_NODE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `tasks` effect tasks on `nodes` nodes of `workers` slots and `prefetch` held tasks
/// each, and checks that every task ran exactly once and every node took part.
async fn race(db: TestDatabase, tasks: usize, nodes: usize, workers: usize, prefetch: usize) {
    let mut bundle = setup(db).await;
    testing::create_effect_table(&bundle.db.conn).await;
    let new_tasks: Vec<_> = (0..tasks).map(|_| new_task("test.effect")).collect();
    bundle
        .store
        .enqueue_many(bundle.store.db(), new_tasks)
        .await
        .unwrap();

    let mut runtimes = Vec::new();
    for node in 0..nodes {
        let store = match bundle.db.backend {
            Backend::Sqlite => bundle.store.clone(),
            Backend::Postgres => {
                Store::new(queue::database::connect(&bundle.db.url, 4).await.unwrap())
            }
        };
        let mut registry = Registry::new();
        registry.register("test.effect", EffectExecutor);
        let config = queue::RuntimeConfig {
            workers,
            prefetch: Some(prefetch),
            // Every node lives throughout, so a rescue here could only come from a node
            // starved of CPU past its timeout (seen with `fast_config`'s 2 s on a loaded
            // machine); this executor ignores its checkpoint and would then count twice.
            node_timeout: RACE_NODE_TIMEOUT,
            ..testing::fast_config(&format!("race-{node}"))
        };
        runtimes.push(Runtime::start(config, store, registry).await.unwrap());
    }
    let tasks = tasks as i64;
    bundle.wait_count(TaskStatus::Completed, tasks as u64).await;
    for runtime in runtimes {
        runtime.shutdown(Duration::from_secs(5)).await;
    }
    // This executor does not look at its checkpoint, so a task rescued between its batch
    // and its completion would run twice: the message says how many were claimed more
    // than once.
    let reclaimed = bundle
        .db
        .scalar("SELECT COUNT(*) FROM queue_task WHERE attempt > 1")
        .await;
    assert_eq!(
        bundle.effects().await,
        (tasks, tasks),
        "every task ran exactly once ({reclaimed} tasks were claimed more than once)"
    );
    // Every node took part (nobody was locked out).
    let claimers = bundle
        .db
        .scalar("SELECT COUNT(DISTINCT scheduled_by_process) FROM queue_task")
        .await;
    assert!(claimers > 1, "only {claimers} node claimed tasks");
    bundle.assert_kept_tables_match_rows().await;
}

async fn run_at_is_never_early(db: TestDatabase) {
    // With a clock under the test's control.
    let t0 = Utc::now();
    let clock = ManualClock::new(t0);
    let store = Store::with_clock(db.conn.clone(), Arc::new(clock.clone()));
    let task = store
        .enqueue(
            store.db(),
            new_task("test.later").with_run_at(t0 + TimeDelta::seconds(2)),
        )
        .await
        .unwrap();
    let claim = |now| TaskGetAvailableParams {
        max: 10,
        now,
        node_id: "clock-node",
        take_turns: true,
        on_node: &[],
    };
    assert!(
        store
            .task_get_available(claim(t0))
            .await
            .unwrap()
            .is_empty()
    );
    let almost = t0 + TimeDelta::milliseconds(1999);
    assert!(
        store
            .task_get_available(claim(almost))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.task_next_run_at().await.unwrap(), Some(task.run_at));
    clock.advance(TimeDelta::seconds(2));
    let claimed = store
        .task_get_available(claim(queue::Clock::now(&clock)))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, task.id);

    // And with a running node and the wall clock.
    let mut bundle = setup(db).await;
    let started = Arc::new(std::sync::Mutex::new(None));
    let mut registry = Registry::new();
    registry.register("test.when", StartTime(started.clone()));
    let runtime = bundle.start("run-at", registry).await;
    let run_at = Utc::now() + TimeDelta::seconds(2);
    let task = bundle
        .enqueue(new_task("test.when").with_run_at(run_at))
        .await;
    bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    let started_at = started.lock().unwrap().expect("the executor ran");
    assert!(
        started_at >= run_at,
        "started at {started_at}, before run_at {run_at}"
    );
}

/// A task scheduled far ahead and abandoned before it started must not keep the producer
/// from the next task due (the dashboard's Cancel does this).
async fn a_cancelled_future_task_leaves_the_next_one_due(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let mut registry = Registry::new();
    registry.register("test.when", StartTime(Arc::default()));
    let runtime = bundle.start("cancel-future", registry).await;
    let tomorrow = bundle
        .enqueue(new_task("test.when").with_run_at(Utc::now() + TimeDelta::days(1)))
        .await;
    assert!(
        bundle
            .store
            .task_abandon(tomorrow.id, "cancelled", "sam")
            .await
            .unwrap()
    );
    bundle.assert_kept_tables_match_rows().await;
    assert_eq!(bundle.store.task_next_run_at().await.unwrap(), None);
    let soon = bundle
        .enqueue(
            new_task("test.when")
                .with_run_at(Utc::now() + TimeDelta::seconds(2))
                .with_priority(10),
        )
        .await;
    assert_eq!(
        bundle.store.task_next_run_at().await.unwrap(),
        Some(soon.run_at)
    );
    bundle.wait_status(soon.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// Records when it started.
struct StartTime(Arc<std::sync::Mutex<Option<chrono::DateTime<Utc>>>>);

#[async_trait::async_trait]
impl queue::TaskExecutor for StartTime {
    async fn execute(&self, _ctx: &mut queue::TaskContext) -> Result<(), queue::TaskError> {
        *self.0.lock().unwrap() = Some(Utc::now());
        Ok(())
    }
}

async fn claims_by_priority_then_fifo(db: TestDatabase) {
    let bundle = setup(db).await;
    let low_1 = bundle.enqueue(new_task("test.order")).await;
    let high = bundle
        .enqueue(new_task("test.order").with_priority(5))
        .await;
    let low_2 = bundle.enqueue(new_task("test.order")).await;
    let claimed = bundle
        .store
        .task_get_available(TaskGetAvailableParams {
            max: 2,
            now: Utc::now(),
            node_id: "order-node",
            take_turns: true,
            on_node: &[],
        })
        .await
        .unwrap();
    let ids: Vec<_> = claimed.iter().map(|t| t.id).collect();
    assert_eq!(
        ids,
        vec![high.id, low_1.id],
        "claims no more than asked, in order"
    );
    let row = &claimed[0];
    assert_eq!(row.workflow_status, TaskStatus::Executing);
    assert!(row.execution_started_date.is_some());
    assert_eq!(row.scheduled_by_process.as_deref(), Some("order-node"));
    assert!(row.scheduling_started_date.is_some());
    assert_eq!(row.attempt, 1);
    assert_eq!(
        bundle.task(low_2.id).await.workflow_status,
        TaskStatus::Queued
    );
}

async fn paused_components_are_not_claimed(db: TestDatabase) {
    let bundle = setup(db).await;
    let task = bundle.enqueue(new_task("test.paused")).await;
    assert!(
        bundle
            .store
            .component_pause("test.paused", "admin")
            .await
            .unwrap()
    );
    assert!(
        !bundle
            .store
            .component_pause("test.paused", "admin")
            .await
            .unwrap()
    );
    let claim = TaskGetAvailableParams {
        max: 10,
        now: Utc::now(),
        node_id: "pause-node",
        take_turns: true,
        on_node: &[],
    };
    assert!(
        bundle
            .store
            .task_get_available(claim)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(bundle.store.task_next_run_at().await.unwrap(), None);
    assert_eq!(bundle.store.component_paused_list().await.unwrap().len(), 1);
    assert!(bundle.store.component_resume("test.paused").await.unwrap());
    let claimed = bundle.store.task_get_available(claim).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, task.id);
}

/// An admin's resume is a person's write, after which bulk work keeps its batches short; a
/// resume nobody waits on (a benchmark starting its clock) is not.
async fn only_a_person_resuming_counts_as_people_writing(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    assert!(store.component_pause("test.paused", "admin").await.unwrap());
    let fresh = Store::new(store.db().clone());
    assert!(!fresh.people_writing());
    let resumed = fresh.component_resume_as("test.paused", WriteClass::Background);
    assert!(resumed.await.unwrap());
    assert!(!fresh.people_writing());
    assert!(!fresh.component_resume("test.paused").await.unwrap());
    assert!(fresh.people_writing());
}

/// A submission counts as people writing for its own short window (the clock's part is
/// `people_writing`'s unit test): background work does not.
async fn a_submission_of_bulk_work_is_people_writing_for_seconds(db: TestDatabase) {
    let bundle = setup(db).await;
    let fresh = Store::new(bundle.store.db().clone());
    let txn = fresh.begin_write().await.unwrap();
    txn.execute_unprepared("SELECT 1").await.unwrap();
    txn.commit().await.unwrap();
    assert!(
        !fresh.people_writing(),
        "the queue's own work is no person's"
    );
    let mut txn = fresh.begin_queue_as(WriteClass::Submission).await.unwrap();
    txn.enqueue(new_task("test.submitted")).await.unwrap();
    txn.commit().await.unwrap();
    assert!(fresh.people_writing());
}

/// The idle producer's nap ends at the earliest `run_at` among the queued tasks of unpaused
/// components, whatever their priority: the statement visits each priority's first entry in
/// the claim index, so the earliest task may sit under a lower priority than others, and a
/// paused component's earlier tasks must not count.
async fn the_next_run_at_is_the_earliest_unpaused_task_of_any_priority(db: TestDatabase) {
    let bundle = setup(db).await;
    assert_eq!(bundle.store.task_next_run_at().await.unwrap(), None);
    let t0 = Utc::now() + TimeDelta::hours(1);
    let later = |minutes, priority, component| {
        new_task(component)
            .with_priority(priority)
            .with_run_at(t0 + TimeDelta::minutes(minutes))
    };
    bundle.enqueue(later(30, 5, "test.next")).await;
    bundle.enqueue(later(20, 0, "test.next")).await;
    let earliest_unpaused = bundle.enqueue(later(10, 0, "test.next")).await;
    bundle.enqueue(later(15, -3, "test.next")).await;
    let earliest = bundle.enqueue(later(1, 2, "test.next.paused")).await;
    bundle.enqueue(later(5, -3, "test.next.paused")).await;
    // Finished tasks are no longer queued, however early they were due.
    let done = bundle.enqueue(later(-30, 9, "test.next")).await;
    assert!(
        bundle
            .store
            .task_abandon(done.id, "not needed", "admin")
            .await
            .unwrap()
    );

    assert_eq!(
        bundle.store.task_next_run_at().await.unwrap(),
        Some(earliest.run_at)
    );
    bundle
        .store
        .component_pause("test.next.paused", "admin")
        .await
        .unwrap();
    assert_eq!(
        bundle.store.task_next_run_at().await.unwrap(),
        Some(earliest_unpaused.run_at)
    );
}

/// The columns a claim or a completion writes. No index of `queue_task` may name one, so
/// that PostgreSQL can rewrite the row in place (a HOT update) instead of adding an entry to
/// every index; what those indexes answered is answered by tables the triggers keep and by
/// generated columns whose values these writes leave alone (`m20261124_000080_hot_updates`).
const CLAIM_AND_COMPLETION_COLUMNS: [&str; 8] = [
    "workflow_status",
    "workflow_stopped_date",
    "scheduled_by_process",
    "scheduling_started_date",
    "execution_started_date",
    "modified_date",
    "attempt",
    "lease_version",
];

async fn no_index_of_a_task_changes_when_it_is_claimed_or_completed(db: TestDatabase) {
    let definitions = match db.backend {
        Backend::Postgres => "SELECT indexdef FROM pg_indexes WHERE tablename = 'queue_task'",
        Backend::Sqlite => {
            "SELECT sql FROM sqlite_master \
             WHERE type = 'index' AND tbl_name = 'queue_task' AND sql IS NOT NULL"
        }
    };
    let rows = db
        .conn
        .query_all_raw(sea_orm::Statement::from_string(
            db.conn.get_database_backend(),
            definitions,
        ))
        .await
        .unwrap();
    assert!(rows.len() >= 4, "the indexes of queue_task were not found");
    for row in rows {
        let definition: String = row.try_get_by_index(0).unwrap();
        for column in CLAIM_AND_COMPLETION_COLUMNS {
            assert!(
                !definition.contains(column),
                "an index names {column}, which claims or completions change: {definition}"
            );
        }
    }
}

/// On PostgreSQL a claim rewrites every task it takes within the task's own page (a HOT
/// update, counted by PostgreSQL's statistics), even when it takes every task of the page
/// in one statement, so that nothing can be pruned first: pages are filled to a third,
/// leaving room for each row's next version (`m20261128_000150_pages_a_third_full`). At
/// half full, 112 of these 600 moved to another page and into every index.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_claims_rewrite_tasks_within_their_pages() {
    let Some(db) = TestDatabase::create::<queue::schema::QueueMigrator>(Backend::Postgres).await
    else {
        return;
    };
    // One connection, whose statistics are flushed when it is asked to.
    let store = Store::new(queue::database::connect(&db.url, 1).await.unwrap());
    let tasks = 600;
    let backlog: Vec<_> = (0..tasks).map(|_| new_task("test.in_page")).collect();
    store.enqueue_many(store.db(), backlog).await.unwrap();
    let before = task_updates(&store).await;
    let claimed = store
        .task_get_available(TaskGetAvailableParams {
            max: tasks,
            now: Utc::now(),
            node_id: "in-page-node",
            take_turns: true,
            on_node: &[],
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), tasks as usize);
    let after = task_updates(&store).await;
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (i64::from(tasks), i64::from(tasks)),
        "(updates, of which within the page) of the claim of {tasks} tasks"
    );
}

/// `queue_task`'s updates so far and how many of them were HOT.
async fn task_updates(store: &Store) -> (i64, i64) {
    flushed_statistics(
        store,
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'queue_task'",
    )
    .await
}

/// PostgreSQL's claims, and the trigger that removes the claimed tasks' entries, keep to
/// the indexes of `queue_ready` when their plans were made while a vacuum had just
/// recorded the table as empty (a drained queue, the state autovacuum finds most often):
/// the plans are kept, and a backlog that arrives then must not be read whole by every
/// claim (see `m20261124_000090_steady_plans`). Counted by PostgreSQL's own statistics:
/// no claim may scan `queue_ready` or `queue_task` sequentially.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_claims_keep_to_the_indexes_after_the_ready_table_was_vacuumed_empty() {
    let Some(db) = TestDatabase::create::<queue::schema::QueueMigrator>(Backend::Postgres).await
    else {
        return;
    };
    db.conn
        .execute_unprepared("VACUUM ANALYZE queue_ready")
        .await
        .unwrap();
    // One connection: its plans are the ones under test, and its statistics are flushed
    // when it is asked to.
    let store = Store::new(queue::database::connect(&db.url, 1).await.unwrap());
    let claim = || TaskGetAvailableParams {
        max: 256,
        now: Utc::now(),
        node_id: "steady-node",
        take_turns: true,
        on_node: &[],
    };
    // Six claims of an empty queue: five custom plans, then the kept generic one.
    for _ in 0..6 {
        assert!(store.task_get_available(claim()).await.unwrap().is_empty());
    }
    let backlog: Vec<_> = (0..3000).map(|_| new_task("test.steady")).collect();
    let queued = store.enqueue_many(store.db(), backlog).await.unwrap();

    let before = sequential_scans(&store).await;
    let mut claimed = 0;
    for _ in 0..4 {
        claimed += store.task_get_available(claim()).await.unwrap().len();
    }
    assert_eq!(claimed, 4 * 256);
    assert_eq!(
        sequential_scans(&store).await,
        before,
        "claims read queue_ready or queue_task from start to end (sequential scans of each)"
    );

    // Outside a claim, the trigger removes the entries of queued tasks that an admin
    // abandons (the admin's UPDATE finds its tasks by a plan of its own, not under test).
    let abandoned: Vec<_> = queued[queued.len() - 200..].iter().map(|t| t.id).collect();
    let outcome = store
        .task_abandon_many(
            &queue::TaskSelector::Ids(abandoned),
            "steady plans",
            "admin",
        )
        .await
        .unwrap();
    assert_eq!(outcome.changed.len(), 200);
    assert_eq!(
        sequential_scans(&store).await.0,
        before.0,
        "the trigger read queue_ready from start to end to remove abandoned tasks' entries"
    );
}

/// The sequential scans of `queue_ready` and of `queue_task` so far.
async fn sequential_scans(store: &Store) -> (i64, i64) {
    flushed_statistics(
        store,
        "SELECT \
           (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'queue_ready'), \
           (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'queue_task')",
    )
    .await
}

/// The two counters `query` reads from PostgreSQL's statistics, with those of the store's
/// one connection flushed first.
async fn flushed_statistics(store: &Store, query: &str) -> (i64, i64) {
    let db = store.db();
    db.execute_unprepared("SELECT pg_stat_force_next_flush()")
        .await
        .unwrap();
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(
            db.get_database_backend(),
            query,
        ))
        .await
        .unwrap()
        .unwrap();
    (
        row.try_get_by_index(0).unwrap(),
        row.try_get_by_index(1).unwrap(),
    )
}
