//! Running limits (ADR 0079): at most N tasks of a component run at once across the
//! cluster, on one node and on three; the rest wait their turn, none is lost, and none
//! spends an attempt waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use queue::testing::{self, TestDatabase};
use queue::{
    NewTask, Registry, Runtime, RuntimeConfig, Store, TaskContext, TaskError, TaskExecutor,
    TaskFilter, TaskStatus,
};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::json;
use uuid::Uuid;

use super::{PATIENCE, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_running_limit_holds_on_one_node,
    a_running_limit_holds_across_three_nodes,
    an_admins_pause_takes_over_a_limits,
);

const LIMITED: &str = "test.limited";
const LIMIT: u32 = 2;

/// Counts how many of its tasks run at once, across every node in the process.
#[derive(Clone, Default)]
struct Overlap {
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl TaskExecutor for Overlap {
    async fn execute(&self, _ctx: &mut TaskContext) -> Result<(), TaskError> {
        let running = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(running, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(150)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn a_running_limit_holds_on_one_node(db: TestDatabase) {
    a_running_limit_holds(db, 1).await;
}

async fn a_running_limit_holds_across_three_nodes(db: TestDatabase) {
    a_running_limit_holds(db, 3).await;
}

/// Eight tasks of a component limited to two, on `nodes` nodes of four slots each: all
/// complete on their first attempt, never more than two at once, and two did run together.
async fn a_running_limit_holds(db: TestDatabase, nodes: usize) {
    let mut bundle = setup(db).await;
    let overlap = Overlap::default();
    let mut runtimes = Vec::with_capacity(nodes);
    for node in 0..nodes {
        let conn = queue::database::connect(&bundle.db.url, 4).await.unwrap();
        let mut registry = Registry::new();
        registry.register(LIMITED, overlap.clone());
        registry.limit_running(LIMITED, LIMIT).unwrap();
        let config = RuntimeConfig {
            workers: 4,
            // A place is held under its lease: a node whose heartbeat a loaded machine
            // delays past a short timeout is rescued, its place freed while its executor
            // still runs (fenced at its next write), and the count here would see one more.
            node_timeout: Duration::from_secs(60),
            ..testing::fast_config(&format!("limits-{node}"))
        };
        let runtime = Runtime::start(config, Store::new(conn), registry).await;
        runtimes.push(runtime.unwrap());
    }
    let tasks: Vec<NewTask> = (0..8)
        .map(|_| NewTask::new(LIMITED, json!({}), Uuid::nil()))
        .collect();
    let store = bundle.store.clone();
    store.enqueue_many(store.db(), tasks).await.unwrap();
    bundle.wait_count(TaskStatus::Completed, 8).await;

    assert!(
        overlap.most.load(Ordering::SeqCst) <= LIMIT as usize,
        "at most {LIMIT} ran at once, not {}",
        overlap.most.load(Ordering::SeqCst)
    );
    assert_eq!(overlap.most.load(Ordering::SeqCst), LIMIT as usize);
    let done = store
        .task_list(&TaskFilter::default(), queue::Page::first(10))
        .await
        .unwrap();
    assert!(
        done.iter().all(|task| task.attempt == 1),
        "waiting spent no attempt"
    );
    assert!(
        store.component_paused_list().await.unwrap().is_empty(),
        "the limit's pause is lifted once nothing runs"
    );
    let stops: Vec<_> = runtimes
        .into_iter()
        .map(|runtime| tokio::spawn(runtime.shutdown(PATIENCE)))
        .collect();
    for stop in stops {
        stop.await.unwrap();
    }
}

/// An admin pausing a component its limit has paused takes the pause over: it is theirs,
/// and stays when the limit's places free.
async fn an_admins_pause_takes_over_a_limits(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let conn = store.db();
    conn.execute_raw(Statement::from_sql_and_values(
        conn.get_database_backend(),
        "INSERT INTO queue_component_pause (component, paused_date, paused_by) VALUES ($1, $2, $3)",
        [
            LIMITED.into(),
            store.clock().now().into(),
            queue::LIMIT_PAUSER.into(),
        ],
    ))
    .await
    .unwrap();
    assert!(
        store.component_pause(LIMITED, "ada").await.unwrap(),
        "taken over"
    );
    assert!(
        !store.component_pause(LIMITED, "ada").await.unwrap(),
        "already theirs"
    );
    let paused = store.component_paused_list().await.unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].paused_by, "ada");
}
