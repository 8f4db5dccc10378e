//! Nodes hold claimed tasks beyond their free slots (`RuntimeConfig::prefetch`) only while
//! their tasks are short, and hand the held ones back when they shut down (their
//! exactly-once race is in `claim`). A lone node on PostgreSQL claims ahead under a
//! backlog; beside another node, or on SQLite, it does not.

use std::time::Duration;

use async_trait::async_trait;
use queue::testing::{self, TestDatabase};
use queue::{
    NodeIdentity, Registry, Runtime, RuntimeConfig, RuntimeHandle, Store, Task, TaskContext,
    TaskError, TaskExecutor, TaskStatus,
};
use sea_orm::DbBackend;

use super::{Bundle, CountingExecutor, PATIENCE, new_task, setup};
use crate::crash::UntilCancelled;

queue::backend_tests!(queue::schema::QueueMigrator =>
    shutdown_hands_held_tasks_back,
    long_tasks_are_not_held,
    a_lone_node_claims_ahead_on_postgres_only,
    no_claim_ahead_beside_another_node,
);

/// Takes a while, as a bulk action's batch does.
struct Slow;

#[async_trait]
impl TaskExecutor for Slow {
    async fn execute(&self, _ctx: &mut TaskContext) -> Result<(), TaskError> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(())
    }
}

/// Starts a one-slot node that may hold 5 tasks, running `component` and quick counting
/// tasks.
async fn one_slot_node(
    bundle: &Bundle,
    component: &str,
    executor: impl TaskExecutor + 'static,
) -> RuntimeHandle {
    let mut registry = Registry::new();
    registry
        .register(component, executor)
        .register("test.quick", CountingExecutor::default());
    let config = RuntimeConfig {
        workers: 1,
        prefetch: Some(5),
        ..testing::fast_config("holding")
    };
    Runtime::start(config, bundle.store.clone(), registry)
        .await
        .unwrap()
}

/// Enqueues `count` tasks of `component` and waits until every one is COMPLETED.
async fn run_to_completion(bundle: &mut Bundle, component: &str, count: u64) {
    for _ in 0..count {
        bundle.enqueue(new_task(component)).await;
    }
    bundle.wait_count(TaskStatus::Completed, count).await;
}

/// Enqueues `count` tasks of `component` in one transaction.
async fn enqueue_many(bundle: &Bundle, component: &str, count: usize) -> Vec<Task> {
    let tasks: Vec<_> = (0..count).map(|_| new_task(component)).collect();
    bundle
        .store
        .enqueue_many(bundle.store.db(), tasks)
        .await
        .unwrap()
}

async fn shutdown_hands_held_tasks_back(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = one_slot_node(&bundle, "test.until_cancelled", UntilCancelled).await;
    // Quick tasks first: the node then expects its slot to start held tasks soon.
    run_to_completion(&mut bundle, "test.quick", 3).await;
    let tasks = enqueue_many(&bundle, "test.until_cancelled", 6).await;
    // One claim took the task that runs and as many more as the node's pace lets it hold:
    // all five at the quick tasks' usual pace, fewer on a loaded machine, where they measure
    // slower (a clean-clone CI run waited for six in vain). At least one is held.
    let executing = queue::TaskFilter {
        statuses: vec![TaskStatus::Executing],
        ..Default::default()
    };
    let store = bundle.store.clone();
    testing::wait_until(
        &mut bundle.events,
        PATIENCE,
        "one task runs and at least one is held",
        async || store.task_count(&executing).await.unwrap() >= 2,
    )
    .await;

    let report = runtime.shutdown(Duration::from_millis(200)).await;
    assert_eq!(report.cancelled, 1, "only the running task was cancelled");
    for task in &tasks {
        let row = bundle.task(task.id).await;
        assert_eq!(row.workflow_status, TaskStatus::Queued, "{row:?}");
        assert_eq!(row.attempt, 0, "no attempt is spent: {row:?}");
    }
    let nodes = bundle.store.node_list().await.unwrap();
    assert_eq!(nodes[0].tasks_running, 0);
}

async fn long_tasks_are_not_held(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = one_slot_node(&bundle, "test.slow", Slow).await;
    // The node has seen a task take 300 ms: its slot would not start a held one soon.
    run_to_completion(&mut bundle, "test.slow", 1).await;
    enqueue_many(&bundle, "test.slow", 5).await;
    bundle.wait_count(TaskStatus::Executing, 1).await;
    // The claim that started it took only it; the slot is busy, so no other claim ran.
    let queued = bundle
        .store
        .task_count(&queue::TaskFilter {
            statuses: vec![TaskStatus::Queued],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(queued, 4, "the other four stay free for any node to claim");
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// How many claims took the `tasks` that are EXECUTING now: each claim stamps its tasks
/// with its own `scheduling_started_date`.
async fn claims_holding(store: &Store, tasks: &[Task]) -> usize {
    let mut claimed_at = Vec::new();
    for task in tasks {
        let row = store
            .task_get(task.id)
            .await
            .unwrap()
            .expect("the task exists");
        if row.workflow_status == TaskStatus::Executing {
            claimed_at.push(row.scheduling_started_date);
        }
    }
    claimed_at.sort();
    claimed_at.dedup();
    claimed_at.len()
}

/// With its one slot taken by a task that runs until cancelled, a one-slot node that has
/// run quick tasks claims its slot's task and some to hold. Only claiming ahead can take
/// more: the slot never frees up. Returns the tasks, once the first claim has them.
async fn backlog_behind_a_busy_slot(bundle: &mut Bundle) -> Vec<Task> {
    run_to_completion(bundle, "test.quick", 3).await;
    let tasks = enqueue_many(bundle, "test.until_cancelled", 12).await;
    let store = bundle.store.clone();
    testing::wait_until(
        &mut bundle.events,
        PATIENCE,
        "one task runs and at least one is held",
        async || claims_holding(&store, &tasks).await >= 1,
    )
    .await;
    tasks
}

/// After shutdown every task is QUEUED again, with no attempt spent.
async fn all_handed_back(bundle: &Bundle, runtime: RuntimeHandle, tasks: &[Task]) {
    let report = runtime.shutdown(Duration::from_millis(200)).await;
    assert_eq!(report.cancelled, 1, "only the running task was cancelled");
    for task in tasks {
        let row = bundle.task(task.id).await;
        assert_eq!(row.workflow_status, TaskStatus::Queued, "{row:?}");
        assert_eq!(row.attempt, 0, "no attempt is spent: {row:?}");
    }
}

/// How long a node gets to show a claim ahead that it must not make: claims ahead go out
/// within milliseconds of the claim before them.
const NO_CLAIM_AHEAD_WITHIN: Duration = Duration::from_millis(500);

async fn a_lone_node_claims_ahead_on_postgres_only(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = one_slot_node(&bundle, "test.until_cancelled", UntilCancelled).await;
    let tasks = backlog_behind_a_busy_slot(&mut bundle).await;
    let store = bundle.store.clone();
    if store.backend() == DbBackend::Postgres {
        testing::wait_until(
            &mut bundle.events,
            PATIENCE,
            "a second claim while the slot is busy",
            async || claims_holding(&store, &tasks).await >= 2,
        )
        .await;
    } else {
        tokio::time::sleep(NO_CLAIM_AHEAD_WITHIN).await;
        assert_eq!(
            claims_holding(&store, &tasks).await,
            1,
            "SQLite claims no ahead"
        );
    }
    all_handed_back(&bundle, runtime, &tasks).await;
}

async fn no_claim_ahead_beside_another_node(db: TestDatabase) {
    let mut bundle = setup(db).await;
    // Its heartbeat is dated an hour ahead, so it stays alive however slowly the test runs
    // (`fast_config`'s nodes die after 2 s without one).
    let now = bundle.store.clock().now();
    let other = NodeIdentity::new("another-node", now);
    let beat = now + chrono::TimeDelta::hours(1);
    bundle.store.node_heartbeat(&other, 0, beat).await.unwrap();
    let runtime = one_slot_node(&bundle, "test.until_cancelled", UntilCancelled).await;
    let tasks = backlog_behind_a_busy_slot(&mut bundle).await;
    tokio::time::sleep(NO_CLAIM_AHEAD_WITHIN).await;
    let claims = claims_holding(&bundle.store, &tasks).await;
    assert_eq!(claims, 1, "a node beside another claims no ahead");
    all_handed_back(&bundle, runtime, &tasks).await;
}
