//! Task events reach subscribers on every node.

use std::collections::HashSet;
use std::time::Duration;

use queue::testing::{self, Backend, TestDatabase};
use queue::{Registry, Runtime, Store, TaskStatus};

use super::{CountingExecutor, PATIENCE, new_task};

queue::backend_tests!(queue::schema::QueueMigrator => events_of_other_nodes_arrive);

async fn events_of_other_nodes_arrive(db: TestDatabase) {
    if db.backend == Backend::Sqlite {
        // One SQLite database has one node: there are no other nodes to hear from.
        return;
    }
    let mut nodes = Vec::new();
    for name in ["events-a", "events-b"] {
        let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
        let mut registry = Registry::new();
        registry.register("test.count", CountingExecutor::default());
        let runtime = Runtime::start(testing::fast_config(name), store.clone(), registry)
            .await
            .unwrap();
        nodes.push((store, runtime));
    }
    let mut events = nodes[1].0.subscribe();
    let tasks: Vec<_> = (0..200).map(|_| new_task("test.count")).collect();
    let mut txn = nodes[0].0.begin_queue().await.unwrap();
    let tasks = txn.enqueue_many(tasks).await.unwrap();
    txn.commit().await.unwrap();

    let mut completed = HashSet::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while completed.len() < tasks.len() {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("every completion is announced on node b")
            .expect("no events were lost");
        if event.status == TaskStatus::Completed {
            completed.insert(event.task_id);
        }
    }
    let by_a = db
        .scalar("SELECT COUNT(*) FROM queue_task WHERE scheduled_by_process LIKE 'events-a-%'")
        .await;
    assert!(
        by_a > 0,
        "node a ran some tasks, whose events b heard through LISTEN"
    );
    for (_, runtime) in nodes {
        runtime.shutdown(Duration::from_secs(5)).await;
    }
}
