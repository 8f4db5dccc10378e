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
    a_task_whose_nodes_keep_dying_is_parked,
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
    let mut bundle = setup(db).await;
    let task = enqueue_items(&bundle).await;

    let system_id = "crash-host";
    kill_node_after(&mut bundle, system_id, task.id, 2_000).await;

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
    let runtime = bundle.start(system_id, items_registry()).await;
    assert_eq!(runtime.rescued_at_start().retried, vec![task.id]);
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempt, 2);
    assert_every_item_done_once(&bundle, &done).await;
}

/// A task of 10,000 items in batches of 500, and the table its effects go to.
async fn enqueue_items(bundle: &super::Bundle) -> queue::Task {
    testing::create_effect_table(&bundle.db.conn).await;
    bundle
        .enqueue(queue::NewTask {
            spec: json!({ "items": 10_000, "batch": 500 }),
            ..new_task("test.items")
        })
        .await
}

/// The executor of [`enqueue_items`]'s task for an in-process node, at full speed.
fn items_registry() -> Registry {
    let mut registry = Registry::new();
    registry.register(
        "test.items",
        ItemsExecutor {
            pause: Duration::ZERO,
        },
    );
    registry
}

/// The completed items task did each of its 10,000 items exactly once.
async fn assert_every_item_done_once(bundle: &super::Bundle, done: &queue::Task) {
    assert_eq!(done.progress_done, 10_000);
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

/// Starts a child node of `system_id`, waits until the task has done `items` items on it,
/// then kills it with SIGKILL. The child is another process: its changes reach the test only
/// through the database.
async fn kill_node_after(
    bundle: &mut super::Bundle,
    system_id: &str,
    task_id: uuid::Uuid,
    items: i64,
) {
    let child = Command::new(env!("CARGO_BIN_EXE_queue-crash-child"))
        .args([bundle.db.url.as_str(), system_id])
        .spawn()
        .expect("start the child node");
    let mut child = KillOnDrop(child);
    let store = bundle.store.clone();
    testing::wait_until(
        &mut bundle.events,
        PATIENCE,
        &format!("{items} items are done"),
        async || {
            store
                .task_get(task_id)
                .await
                .unwrap()
                .is_some_and(|t| t.progress_done >= items)
        },
    )
    .await;
    child.0.kill().expect("SIGKILL the child");
    child.0.wait().expect("reap the child");
}

/// A task during which its node died twice is the suspect: the rescue parks it at FAILURE
/// instead of handing it to a third node, and an admin's retry gives it a fresh start.
async fn a_task_whose_nodes_keep_dying_is_parked(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let task = enqueue_items(&bundle).await;
    let system_id = "poison-host";
    kill_node_after(&mut bundle, system_id, task.id, 1_000).await;
    // The next incarnation rescues the task (one crash) and runs it until it dies too; it
    // must make progress of its own (the first may have got far before its kill landed).
    let after_first = bundle.task(task.id).await.progress_done;
    kill_node_after(&mut bundle, system_id, task.id, after_first + 1_000).await;
    assert_eq!(bundle.task(task.id).await.crash_count, 1);

    let runtime = bundle.start(system_id, items_registry()).await;
    assert_eq!(runtime.rescued_at_start().failed, vec![task.id]);
    let parked = bundle.task(task.id).await;
    assert_eq!(parked.workflow_status, TaskStatus::Failure);
    assert_eq!(parked.crash_count, 2);
    assert_eq!(
        parked.workflow_status_desc.as_deref(),
        Some(queue::parked_message(2).as_str())
    );
    assert!(
        parked.attempt < parked.max_attempts,
        "parked, not out of attempts"
    );

    assert!(bundle.store.task_retry(task.id, "admin").await.unwrap());
    assert_eq!(bundle.task(task.id).await.crash_count, 0, "a fresh start");
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_every_item_done_once(&bundle, &done).await;
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
    let mut bundle = setup(db).await;
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
