//! The queue's conformance suite: every test runs on SQLite and on PostgreSQL.

mod admin;
#[cfg(feature = "amqp")]
mod amqp;
mod batch_budget;
mod claim;
mod connection;
mod counts;
mod crash;
mod derived;
mod enqueue;
mod events;
mod limits;
mod lock;
mod outcomes;
mod periodic;
mod prefetch;
mod rescue;
mod statistics;
mod turns;
mod wake;
mod wal_checkpoint;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use queue::testing::TestDatabase;
use queue::{
    Checkpoint, NewTask, Registry, Runtime, RuntimeHandle, Store, Task, TaskContext, TaskError,
    TaskExecutor, TaskStatus, testing,
};
use sea_orm::ConnectionTrait;
use serde_json::json;
use uuid::Uuid;

/// How long any wait in this suite may take before the test fails: generous, because on
/// SQLite every commit costs an fsync and the tests run in parallel (the 5,000-task race
/// alone needs about 10,000 commits).
const PATIENCE: Duration = Duration::from_secs(180);

/// A new task of `component` with an arbitrary owner.
fn new_task(component: &str) -> NewTask {
    NewTask::new(component, json!({}), Uuid::nil()).with_created_by("test")
}

/// Writes one `test_effect` row for its task in a batch: counting rows per task shows how
/// often a task really ran (a run whose batch did not commit left nothing).
struct EffectExecutor;

#[async_trait]
impl TaskExecutor for EffectExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let sql = format!(
            "INSERT INTO test_effect (task_id, item) VALUES ('{}', 0)",
            ctx.task_id()
        );
        ctx.batch(move |txn| {
            Box::pin(async move {
                txn.execute_unprepared(&sql).await?;
                Ok(Checkpoint::new(json!({ "done": true })).with_progress(1))
            })
        })
        .await
    }
}

/// Counts its runs; does nothing else.
#[derive(Clone, Default)]
struct CountingExecutor {
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl TaskExecutor for CountingExecutor {
    async fn execute(&self, _ctx: &mut TaskContext) -> Result<(), TaskError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A migrated database, its store, and an event subscription taken before anything happened.
struct Bundle {
    db: TestDatabase,
    store: Store,
    events: tokio::sync::broadcast::Receiver<queue::QueueEvent>,
}

async fn setup(db: TestDatabase) -> Bundle {
    let store = Store::new(db.conn.clone());
    let events = store.subscribe().await.unwrap();
    Bundle { db, store, events }
}

impl Bundle {
    async fn start(&self, system_id: &str, registry: Registry) -> RuntimeHandle {
        Runtime::start(
            testing::fast_config(system_id),
            self.store.clone(),
            registry,
        )
        .await
        .expect("start the runtime")
    }

    async fn enqueue(&self, task: NewTask) -> Task {
        let mut txn = self.store.begin_queue().await.unwrap();
        let row = txn.enqueue(task).await.unwrap();
        txn.commit().await.unwrap();
        row
    }

    async fn task(&self, id: Uuid) -> Task {
        self.store
            .task_get(id)
            .await
            .unwrap()
            .expect("the task exists")
    }

    /// Waits until task `id` is in `status` and returns its row.
    async fn wait_status(&mut self, id: Uuid, status: TaskStatus) -> Task {
        let store = self.store.clone();
        testing::wait_until(
            &mut self.events,
            PATIENCE,
            &format!("{id} is {status}"),
            async || {
                store
                    .task_get(id)
                    .await
                    .unwrap()
                    .is_some_and(|t| t.workflow_status == status)
            },
        )
        .await;
        self.task(id).await
    }

    /// Waits until `count` tasks are in `status`.
    async fn wait_count(&mut self, status: TaskStatus, count: u64) {
        self.wait_count_within(status, count, PATIENCE).await;
    }

    /// Waits until `count` tasks are in `status`; fails after `limit`.
    async fn wait_count_within(&mut self, status: TaskStatus, count: u64, limit: Duration) {
        let store = self.store.clone();
        let filter = queue::TaskFilter {
            statuses: vec![status],
            ..Default::default()
        };
        testing::wait_until(
            &mut self.events,
            limit,
            &format!("{count} tasks are {status}"),
            async || store.task_count(&filter).await.unwrap() == count,
        )
        .await;
    }

    /// Checks that what the triggers keep agrees with the rows: the counts by component and
    /// status with a `GROUP BY` over the whole table, the claim entries with the queued
    /// tasks.
    async fn assert_kept_tables_match_rows(&self) {
        let counted: Vec<(String, String, i64)> = self
            .store
            .task_count_by_status()
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.component, c.status.as_str().to_owned(), c.count))
            .collect();
        let mut grouped = Vec::new();
        for row in self
            .db
            .conn
            .query_all_raw(sea_orm::Statement::from_string(
                self.db.conn.get_database_backend(),
                "SELECT execution_component_name, workflow_status, COUNT(*) FROM queue_task \
                 GROUP BY execution_component_name, workflow_status",
            ))
            .await
            .unwrap()
        {
            grouped.push((
                row.try_get_by_index::<String>(0).unwrap(),
                row.try_get_by_index::<String>(1).unwrap(),
                row.try_get_by_index::<i64>(2).unwrap(),
            ));
        }
        let mut counted = counted;
        counted.sort();
        grouped.sort();
        assert_eq!(counted, grouped, "the kept counts differ from the rows");
        // Every queued task has its claim entry, as it is now, and nothing else has one.
        let queued = "SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'QUEUED'";
        let entries = "SELECT COUNT(*) FROM queue_ready";
        let matching = "SELECT COUNT(*) FROM queue_task t JOIN queue_ready r ON r.task_id = t.id \
             WHERE t.workflow_status = 'QUEUED' AND r.priority = t.priority \
               AND r.run_at = t.run_at AND r.component = t.execution_component_name";
        let queued = self.db.scalar(queued).await;
        assert_eq!(
            (
                self.db.scalar(entries).await,
                self.db.scalar(matching).await
            ),
            (queued, queued),
            "the claim entries differ from the queued tasks"
        );
    }

    /// `(rows, distinct tasks)` in `test_effect`.
    async fn effects(&self) -> (i64, i64) {
        (
            self.db.scalar("SELECT COUNT(*) FROM test_effect").await,
            self.db
                .scalar("SELECT COUNT(DISTINCT task_id) FROM test_effect")
                .await,
        )
    }
}
