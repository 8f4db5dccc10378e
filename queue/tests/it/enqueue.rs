//! Transactional enqueue and unique keys.

use queue::testing::{self, TestDatabase};
use queue::{Registry, TaskStatus};

use super::{EffectExecutor, new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    rolled_back_tasks_never_run_and_committed_ones_run_once,
    unique_key_returns_the_active_task,
);

async fn rolled_back_tasks_never_run_and_committed_ones_run_once(db: TestDatabase) {
    /// Tasks rolled back, and as many committed, while the runtime claims.
    const TASKS: u64 = 300;
    let mut bundle = setup(db).await;
    testing::create_effect_table(&bundle.db.conn).await;
    let mut registry = Registry::new();
    registry.register("test.effect", EffectExecutor);
    let runtime = bundle.start("rollback", registry).await;

    // One task per transaction, as a request handler would; half roll back.
    for _ in 0..TASKS {
        let mut txn = bundle.store.begin_queue().await.unwrap();
        txn.enqueue(new_task("test.effect")).await.unwrap();
        txn.rollback().await.unwrap();
    }
    for _ in 0..TASKS {
        let mut txn = bundle.store.begin_queue().await.unwrap();
        txn.enqueue(new_task("test.effect")).await.unwrap();
        txn.commit().await.unwrap();
    }
    bundle.wait_count(TaskStatus::Completed, TASKS).await;
    runtime.shutdown(std::time::Duration::from_secs(5)).await;

    assert_eq!(
        bundle.db.scalar("SELECT COUNT(*) FROM queue_task").await,
        TASKS as i64
    );
    assert_eq!(
        bundle.effects().await,
        (TASKS as i64, TASKS as i64),
        "each committed task ran exactly once"
    );
}

async fn unique_key_returns_the_active_task(db: TestDatabase) {
    let bundle = setup(db).await;
    let first = bundle
        .enqueue(new_task("test.unique").with_unique_key("k1"))
        .await;
    let again = bundle
        .enqueue(new_task("test.unique").with_unique_key("k1"))
        .await;
    assert_eq!(first.id, again.id, "a duplicate returns the active task");
    let other = bundle
        .enqueue(new_task("test.unique").with_unique_key("k2"))
        .await;
    assert_ne!(first.id, other.id);

    // Within one bulk call too, and mixed with tasks without a key.
    let rows = bundle
        .store
        .enqueue_many(
            bundle.store.db(),
            vec![
                new_task("test.unique").with_unique_key("k1"),
                new_task("test.unique"),
                new_task("test.unique").with_unique_key("k3"),
                new_task("test.unique").with_unique_key("k3"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(rows[0].id, first.id);
    assert_eq!(rows[2].id, rows[3].id);
    assert_eq!(bundle.db.scalar("SELECT COUNT(*) FROM queue_task").await, 4);

    // Once the task is finished, the key is free again.
    bundle
        .store
        .task_abandon(first.id, "done with it", "admin")
        .await
        .unwrap();
    let fresh = bundle
        .enqueue(new_task("test.unique").with_unique_key("k1"))
        .await;
    assert_ne!(fresh.id, first.id);
    assert_eq!(fresh.workflow_status, TaskStatus::Queued);
    // And the abandoned one cannot be retried while the new one holds the key.
    assert!(!bundle.store.task_retry(first.id, "admin").await.unwrap());
}
