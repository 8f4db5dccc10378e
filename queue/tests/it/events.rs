//! Task events reach subscribers on every node, and say what the task's row says.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::broadcast::Receiver;
use tokio::task::JoinSet;
use uuid::Uuid;

use queue::testing::{self, Backend, TestDatabase};
use queue::{QueueEvent, Registry, Runtime, Store, TaskStatus};

use super::{CountingExecutor, PATIENCE, new_task};

queue::backend_tests!(queue::schema::QueueMigrator => events_reach_every_node_as_the_rows_are);

/// A component name as long as the column allows, with characters JSON must escape: the
/// events once travelled as JSON built in SQL, where such a name broke them, and every
/// node's events must still carry it as the row does.
fn awkward_component() -> String {
    let name = "test.\"quoted\"\\path\t".repeat(20);
    name.chars().take(128).collect()
}

async fn events_reach_every_node_as_the_rows_are(db: TestDatabase) {
    // One SQLite database has one node, which hears only its own events (published
    // in-process); on PostgreSQL two nodes share the tasks, and each must hear every
    // completion, the other node's through LISTEN. Which node runs which task is up to
    // their claims (one may even take them all), so every node listens: whatever ran on
    // one node was heard by the other through the database.
    let names: &[&str] = match db.backend {
        Backend::Sqlite => &["events-a"],
        Backend::Postgres => &["events-a", "events-b"],
    };
    let mut nodes = Vec::new();
    for name in names {
        let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
        let mut registry = Registry::new();
        registry.register("test.count", CountingExecutor::default());
        registry.register(awkward_component(), CountingExecutor::default());
        let runtime = Runtime::start(testing::fast_config(name), store.clone(), registry)
            .await
            .unwrap();
        nodes.push((store, runtime));
    }
    let tasks: Vec<_> = (0..200)
        .map(|i| match i % 2 {
            0 => new_task("test.count"),
            _ => new_task(&awkward_component()),
        })
        .collect();
    let mut hearing = JoinSet::new();
    for (store, _) in &nodes {
        hearing.spawn(completions(store.subscribe(), tasks.len()));
    }
    let mut txn = nodes[0].0.begin_queue().await.unwrap();
    let tasks = txn.enqueue_many(tasks).await.unwrap();
    txn.commit().await.unwrap();

    let store = &nodes[0].0;
    while let Some(heard) = hearing.join_next().await {
        let heard = heard.unwrap();
        for task in &tasks {
            let row = store.task_get(task.id).await.unwrap().unwrap();
            assert_eq!(
                heard.get(&task.id),
                Some(&QueueEvent::from(&row)),
                "every node hears the completion, and the event says what the row says"
            );
        }
    }
    for (_, runtime) in nodes {
        runtime.shutdown(Duration::from_secs(5)).await;
    }
}

/// The first `count` completion events `events` receives, by task.
async fn completions(mut events: Receiver<QueueEvent>, count: usize) -> HashMap<Uuid, QueueEvent> {
    let mut completed = HashMap::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while completed.len() < count {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("every completion is announced to every node")
            .expect("no events were lost");
        if event.status == TaskStatus::Completed {
            completed.insert(event.task_id, event);
        }
    }
    completed
}
