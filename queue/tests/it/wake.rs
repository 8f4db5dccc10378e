//! A task committed by another process starts without waiting for the producer's sweep:
//! PostgreSQL nodes hear NOTIFY, SQLite nodes see the file's `data_version` change, and on
//! Linux they look at once when the WAL file is written.

use std::time::Duration;

use queue::testing::{self, Backend, TestDatabase};
use queue::{Registry, Runtime, RuntimeConfig, Store, TaskStatus};

use super::{CountingExecutor, new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator => tasks_of_other_processes_start_before_the_sweep);

/// Far beyond the test's deadline: a task that starts in time was woken up for.
const SWEEP: Duration = Duration::from_secs(120);
/// Each task must complete within this after its commit.
const DEADLINE: Duration = Duration::from_secs(10);

async fn tasks_of_other_processes_start_before_the_sweep(db: TestDatabase) {
    let config = RuntimeConfig {
        sweep_interval: SWEEP,
        ..testing::fast_config("wake")
    };
    ten_tasks_of_another_store_start_in_time(db, config).await;
}

/// With SQLite's `data_version` poll as slow as the sweep, only the WAL file's write cue can
/// start the tasks in time.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_nodes_look_when_the_wal_file_is_written() {
    let db = TestDatabase::create::<queue::schema::QueueMigrator>(Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    let config = RuntimeConfig {
        sweep_interval: SWEEP,
        sqlite_poll_interval: SWEEP,
        ..testing::fast_config("wake-wal")
    };
    ten_tasks_of_another_store_start_in_time(db, config).await;
}

async fn ten_tasks_of_another_store_start_in_time(db: TestDatabase, config: RuntimeConfig) {
    let mut bundle = setup(db).await;
    let runs = CountingExecutor::default();
    let mut registry = Registry::new();
    registry.register("test.count", runs.clone());
    let runtime = Runtime::start(config, bundle.store.clone(), registry)
        .await
        .unwrap();
    // Its own pool and signals: what the runtime learns of its commits, it learns through
    // the database, as from another process.
    let other = Store::new(queue::database::connect(&bundle.db.url, 2).await.unwrap());
    // Let the start-up claim find the queue empty, so the producer is asleep.
    tokio::time::sleep(Duration::from_millis(300)).await;

    for round in 1..=10_u64 {
        // Requests of an idle system, not a burst (a busy SQLite node follows no writes).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut txn = other.begin_queue().await.unwrap();
        txn.enqueue(new_task("test.count")).await.unwrap();
        txn.commit().await.unwrap();
        bundle
            .wait_count_within(TaskStatus::Completed, round, DEADLINE)
            .await;
    }
    assert_eq!(runs.runs.load(std::sync::atomic::Ordering::SeqCst), 10);
    runtime.shutdown(Duration::from_secs(5)).await;
}
