//! Nodes hold claimed tasks beyond their free slots (`RuntimeConfig::prefetch`) only while
//! their tasks are short, and hand the held ones back when they shut down (their
//! exactly-once race is in `claim`).

use std::time::Duration;

use async_trait::async_trait;
use queue::testing::{self, TestDatabase};
use queue::{
    Registry, Runtime, RuntimeConfig, RuntimeHandle, Task, TaskContext, TaskError, TaskExecutor,
    TaskStatus,
};

use super::{Bundle, CountingExecutor, PATIENCE, new_task, setup};
use crate::crash::UntilCancelled;

queue::backend_tests!(queue::schema::QueueMigrator =>
    shutdown_hands_held_tasks_back,
    long_tasks_are_not_held,
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
