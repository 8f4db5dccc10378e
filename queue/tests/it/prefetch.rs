//! Nodes that hold claimed tasks beyond their free slots (`RuntimeConfig::prefetch`) hand the
//! held ones back when they shut down (their exactly-once race is in `claim`).

use std::time::Duration;

use queue::testing::{self, TestDatabase};
use queue::{Registry, Runtime, RuntimeConfig, TaskStatus};

use super::{new_task, setup};
use crate::crash::UntilCancelled;

queue::backend_tests!(queue::schema::QueueMigrator => shutdown_hands_held_tasks_back);

async fn shutdown_hands_held_tasks_back(db: TestDatabase) {
    let mut bundle = setup(db);
    let mut registry = Registry::new();
    registry.register("test.until_cancelled", UntilCancelled);
    let config = RuntimeConfig {
        workers: 1,
        prefetch: 5,
        ..testing::fast_config("holding")
    };
    let tasks: Vec<_> = (0..6).map(|_| new_task("test.until_cancelled")).collect();
    let tasks = bundle
        .store
        .enqueue_many(bundle.store.db(), tasks)
        .await
        .unwrap();
    let runtime = Runtime::start(config, bundle.store.clone(), registry)
        .await
        .unwrap();
    // One claim took all six: one runs, five wait for the slot.
    bundle.wait_count(TaskStatus::Executing, 6).await;

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
