//! Task events reach subscribers on every node, and say what the task's row says.

use std::collections::HashMap;
use std::time::Duration;

use sea_orm::sqlx::postgres::PgListener;
use tokio::sync::broadcast::Receiver;
use tokio::task::JoinSet;
use uuid::Uuid;

use queue::testing::{self, Backend, TestDatabase};
use queue::{QueueEvent, Registry, Runtime, Store, TaskStatus};

use super::{CountingExecutor, PATIENCE, new_task};

queue::backend_tests!(queue::schema::QueueMigrator =>
    events_reach_every_node_as_the_rows_are,
    changes_are_announced_only_while_another_store_watches,
);

/// PostgreSQL's channel of task change notifications (`announce::EVENT_CHANNEL`).
const EVENT_CHANNEL: &str = "bulkq_queue_event";

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
        hearing.spawn(completions(store.subscribe().await.unwrap(), tasks.len()));
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

/// A node announces its claims and completions on PostgreSQL only while another store
/// subscribes to task events: with nobody to hear them, nothing is sent; once a store
/// subscribes, every change that starts afterwards is announced; once its subscribers are
/// gone and its heartbeat has run, nothing is sent again. (SQLite has one node, which
/// announces nothing: its events are published in-process.)
async fn changes_are_announced_only_while_another_store_watches(db: TestDatabase) {
    if db.backend != Backend::Postgres {
        return;
    }
    let registry = || {
        let mut registry = Registry::new();
        registry.register("test.count", CountingExecutor::default());
        registry
    };
    let node = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
    let runtime = Runtime::start(testing::fast_config("announcer"), node.clone(), registry())
        .await
        .unwrap();
    let mut heard = PgListener::connect(&db.url).await.unwrap();
    heard.listen(EVENT_CHANNEL).await.unwrap();

    run_tasks(&node, 5).await;
    assert_silent(&mut heard, "nobody watches").await;

    let watcher = Store::new(queue::database::connect(&db.url, 2).await.unwrap());
    let events = watcher.subscribe().await.unwrap();
    let tasks = run_tasks(&node, 5).await;
    // Each task is named twice: by its claim and by its completion.
    let mut named: HashMap<Uuid, usize> = HashMap::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tasks
        .iter()
        .any(|id| named.get(id).copied().unwrap_or(0) < 2)
    {
        let notification = tokio::time::timeout_at(deadline, heard.recv())
            .await
            .expect("a watched node announces its claims and completions")
            .unwrap();
        for word in notification.payload().split(' ').skip(1) {
            *named.entry(word.parse().unwrap()).or_default() += 1;
        }
    }

    drop(events);
    // The watcher's runtime: its heartbeat, the first one at start, ends the watch.
    let watcher_runtime =
        Runtime::start(testing::fast_config("watcher"), watcher.clone(), registry())
            .await
            .unwrap();
    run_tasks(&node, 5).await;
    assert_silent(&mut heard, "the watcher has gone").await;

    watcher_runtime.shutdown(Duration::from_secs(5)).await;
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// Enqueues `count` counting tasks on `store` and waits until they are all completed.
async fn run_tasks(store: &Store, count: usize) -> Vec<Uuid> {
    let mut txn = store.begin_queue().await.unwrap();
    let tasks = txn
        .enqueue_many((0..count).map(|_| new_task("test.count")).collect())
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for task in &tasks {
        while store
            .task_get(task.id)
            .await
            .unwrap()
            .unwrap()
            .workflow_status
            != TaskStatus::Completed
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the tasks completed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tasks.iter().map(|task| task.id).collect()
}

/// No notification arrives for a while.
async fn assert_silent(heard: &mut PgListener, why: &str) {
    if let Ok(notification) = tokio::time::timeout(QUIET, heard.recv()).await {
        panic!("{why}, yet a change was announced: {notification:?}");
    }
}

/// How long [`assert_silent`] listens: far longer than a notification takes to arrive.
const QUIET: Duration = Duration::from_millis(500);

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
