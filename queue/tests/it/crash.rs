//! Interruptions: a node killed with SIGKILL in the middle of checkpointed work, and a
//! graceful shutdown that hands running work back.

use std::process::{Child, Command};
use std::time::Duration;

use queue::testing::{self, ItemsExecutor, TestDatabase};
use queue::{Registry, TaskContext, TaskError, TaskExecutor, TaskStatus};
use serde_json::json;

use super::{PATIENCE, new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_killed_node_resumes_after_the_last_checkpoint,
    shutdown_hands_running_tasks_back,
);

/// Kills the child process however the test ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn a_killed_node_resumes_after_the_last_checkpoint(db: TestDatabase) {
    let mut bundle = setup(db);
    testing::create_effect_table(&bundle.db.conn).await;
    let task = bundle
        .enqueue(queue::NewTask {
            spec: json!({ "items": 10_000, "batch": 500 }),
            ..new_task("test.items")
        })
        .await;

    let system_id = "crash-host";
    let child = Command::new(env!("CARGO_BIN_EXE_queue-crash-child"))
        .args([bundle.db.url.as_str(), system_id])
        .spawn()
        .expect("start the child node");
    let mut child = KillOnDrop(child);
    // The child is another process: its changes reach us only through the database.
    let store = bundle.store.clone();
    testing::wait_until(
        &mut bundle.events,
        PATIENCE,
        "a few batches are done",
        async || {
            store
                .task_get(task.id)
                .await
                .unwrap()
                .is_some_and(|t| t.progress_done >= 2_000)
        },
    )
    .await;
    child.0.kill().expect("SIGKILL the child");
    child.0.wait().expect("reap the child");

    let killed = bundle.task(task.id).await;
    assert_eq!(
        killed.workflow_status,
        TaskStatus::Executing,
        "the crash left it claimed"
    );
    assert!(
        killed.progress_done < 10_000,
        "killed mid-way, not after the end"
    );
    // One statement, so one snapshot: on PostgreSQL a COMMIT the child sent just before it
    // died can still complete after it is reaped, and two separate reads could straddle it.
    // The only task is this one.
    let effects_beyond_checkpoint = bundle
        .db
        .scalar(
            "SELECT (SELECT COUNT(*) FROM test_effect) - (SELECT progress_done FROM queue_task)",
        )
        .await;
    assert_eq!(
        effects_beyond_checkpoint, 0,
        "effects match the last checkpoint exactly"
    );

    // The node restarts: the new incarnation rescues its predecessor's task at once.
    let mut registry = Registry::new();
    registry.register(
        "test.items",
        ItemsExecutor {
            pause: Duration::ZERO,
        },
    );
    let runtime = bundle.start(system_id, registry).await;
    assert_eq!(runtime.rescued_at_start().retried, vec![task.id]);
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.progress_done, 10_000);
    assert_eq!(done.attempt, 2);
    assert_eq!(
        bundle.db.scalar("SELECT COUNT(*) FROM test_effect").await,
        10_000
    );
    assert_eq!(
        bundle
            .db
            .scalar("SELECT COUNT(DISTINCT item) FROM test_effect")
            .await,
        10_000,
        "no item was done twice or skipped"
    );
    bundle.assert_kept_tables_match_rows().await;
}

/// Runs until its cancellation token fires.
pub(crate) struct UntilCancelled;

#[async_trait::async_trait]
impl TaskExecutor for UntilCancelled {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        ctx.cancellation().cancelled().await;
        Err(TaskError::Cancelled)
    }
}

async fn shutdown_hands_running_tasks_back(db: TestDatabase) {
    let mut bundle = setup(db);
    let mut registry = Registry::new();
    registry.register("test.until_cancelled", UntilCancelled);
    let runtime = bundle.start("shutdown", registry).await;
    let task = bundle.enqueue(new_task("test.until_cancelled")).await;
    bundle.wait_status(task.id, TaskStatus::Executing).await;

    let report = runtime.shutdown(Duration::from_millis(200)).await;
    assert_eq!(report.cancelled, 1);
    let row = bundle.task(task.id).await;
    assert_eq!(row.workflow_status, TaskStatus::Queued);
    assert_eq!(row.attempt, 0, "the interrupted attempt is not spent");
    // The node signed off: its row says so (and stays for the admin view until pruned).
    let nodes = bundle.store.node_list().await.unwrap();
    assert_eq!(nodes.len(), 1);
    assert!(nodes[0].stopped_date.is_some(), "{nodes:?}");
    assert_eq!(nodes[0].tasks_running, 0);
    assert!(nodes[0].worker_slots > 0);
    bundle.assert_kept_tables_match_rows().await;
}
