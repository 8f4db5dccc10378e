//! Throughput and commit-to-start latency of the queue on SQLite and PostgreSQL.
//!
//! `cargo run --release -p queue --features testing --example queue_bench`
//!
//! - Throughput: 20,000 no-op tasks enqueued in one bulk call and committed, then the time
//!   until all are COMPLETED, with 16 workers.
//! - Latency: 300 tasks enqueued one at a time, each in its own committed transaction, 20 ms
//!   apart; the time from just before COMMIT to the executor's first line (p50 and p99).
//!
//! PostgreSQL is skipped when no server answers (see `queue::testing::postgres_admin_url`).
//! These are figures to read, not tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use queue::schema::QueueMigrator;
use queue::testing::{Backend, TestDatabase};
use queue::{
    NewTask, Registry, Runtime, RuntimeConfig, Store, TaskContext, TaskError, TaskExecutor,
    TaskFilter, TaskStatus,
};
use uuid::Uuid;

const THROUGHPUT_TASKS: usize = 20_000;
const LATENCY_TASKS: usize = 300;
const LATENCY_GAP: Duration = Duration::from_millis(20);

type Starts = Arc<Mutex<HashMap<Uuid, Instant>>>;

/// Records when each task's executor began; otherwise does nothing.
struct Noop {
    starts: Starts,
}

#[async_trait::async_trait]
impl TaskExecutor for Noop {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let now = Instant::now();
        if let Ok(mut starts) = self.starts.lock() {
            starts.insert(ctx.task_id(), now);
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
            println!("{backend:?}: skipped, no server");
            continue;
        };
        let store = Store::new(db.conn.clone());
        let starts: Starts = Arc::default();
        let mut registry = Registry::new();
        registry.register(
            "bench.noop",
            Noop {
                starts: starts.clone(),
            },
        );
        let config = RuntimeConfig {
            system_id: "bench".to_owned(),
            workers: 16,
            ..RuntimeConfig::default()
        };
        let runtime = Runtime::start(config, store.clone(), registry).await?;

        let rate = throughput(&store).await?;
        println!("{backend:?}: {rate:.0} no-op tasks/s ({THROUGHPUT_TASKS} tasks, 16 workers)");
        let (p50, p99) = latency(&store, &starts).await?;
        println!(
            "{backend:?}: commit-to-start latency p50 {p50:.1} ms, p99 {p99:.1} ms ({LATENCY_TASKS} tasks)"
        );
        runtime.shutdown(Duration::from_secs(10)).await;
    }
    Ok(())
}

async fn throughput(store: &Store) -> Result<f64, Box<dyn std::error::Error>> {
    let tasks = (0..THROUGHPUT_TASKS)
        .map(|_| NewTask::new("bench.noop", serde_json::json!({}), Uuid::nil()))
        .collect();
    let mut txn = store.begin_queue().await?;
    txn.enqueue_many(tasks).await?;
    txn.commit().await?;
    let started = Instant::now();
    let completed = TaskFilter {
        statuses: vec![TaskStatus::Completed],
        ..TaskFilter::default()
    };
    while store.task_count(&completed).await? < THROUGHPUT_TASKS as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(THROUGHPUT_TASKS as f64 / started.elapsed().as_secs_f64())
}

async fn latency(store: &Store, starts: &Starts) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let mut committed = HashMap::new();
    for _ in 0..LATENCY_TASKS {
        let mut txn = store.begin_queue().await?;
        let task = txn
            .enqueue(NewTask::new(
                "bench.noop",
                serde_json::json!({}),
                Uuid::nil(),
            ))
            .await?;
        committed.insert(task.id, Instant::now());
        txn.commit().await?;
        tokio::time::sleep(LATENCY_GAP).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let starts = starts.lock().map_err(|_| "poisoned")?;
    let mut millis: Vec<f64> = committed
        .iter()
        .filter_map(|(id, at)| {
            starts
                .get(id)
                .map(|start| start.duration_since(*at).as_secs_f64() * 1000.0)
        })
        .collect();
    millis.sort_by(f64::total_cmp);
    if millis.is_empty() {
        return Err("no latency task started".into());
    }
    let pick = |q: f64| millis[((millis.len() - 1) as f64 * q).round() as usize];
    Ok((pick(0.5), pick(0.99)))
}
