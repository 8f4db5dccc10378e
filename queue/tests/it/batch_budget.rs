//! While people write, a node's tasks keep at most its budget of batch transactions open
//! (ADR 0033).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use queue::testing::TestDatabase;
use queue::{
    Checkpoint, Registry, Runtime, RuntimeConfig, TaskContext, TaskError, TaskExecutor, TaskStatus,
    testing,
};
use sea_orm::DbBackend;
use serde_json::json;

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    while_people_write_batches_beyond_the_budget_wait,
);

/// Keeps each of its batches open for a while and notes the most open at once.
#[derive(Clone, Default)]
struct SlowBatches {
    open: Arc<AtomicUsize>,
    most_open: Arc<AtomicUsize>,
}

#[async_trait]
impl TaskExecutor for SlowBatches {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        for batch in 0..3 {
            let txn = ctx.begin_batch().await?;
            let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_open.fetch_max(open, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            self.open.fetch_sub(1, Ordering::SeqCst);
            ctx.commit_batch(txn, Checkpoint::new(json!({ "batch": batch })))
                .await?;
        }
        Ok(())
    }
}

async fn while_people_write_batches_beyond_the_budget_wait(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let executor = SlowBatches::default();
    let mut registry = Registry::new();
    registry.register("test.slow_batches", executor.clone());
    let config = RuntimeConfig {
        workers: 6,
        batches_while_people_write: 2,
        ..testing::fast_config("budget")
    };
    let runtime = Runtime::start(config, bundle.store.clone(), registry)
        .await
        .unwrap();
    // An enqueue is a person's write: from here on, the budget applies.
    for _ in 0..6 {
        bundle.enqueue(new_task("test.slow_batches")).await;
    }
    bundle.wait_count(TaskStatus::Completed, 6).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    // SQLite's write gate admits one batch at a time whatever the budget.
    let expected = match bundle.db.conn.get_database_backend() {
        DbBackend::Sqlite => 1,
        _ => 2,
    };
    assert_eq!(executor.most_open.load(Ordering::SeqCst), expected);
}
