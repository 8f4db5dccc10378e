//! People first: while background batches keep the queue busy, a sign-in waits for at most
//! about one batch, not for the batches queued ahead of it. On SQLite its session row takes
//! the write slot ahead of the waiting batches; on PostgreSQL the dashboard has connections
//! the workers cannot take. The figures (p99 per request kind under load) are `make bench`'s
//! (server/examples/people_under_load.rs); these tests compare times measured in the same
//! run, never against a fixed speed.

use std::time::{Duration, Instant};

use app::api::ssr::{AppState, BulkSettings};
use caseload::seed::{SeedOptions, seed_people};
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{Backend, TestDatabase};
use queue::{
    Checkpoint, NewTask, Registry, Runtime, RuntimeConfig, Store, TaskContext, TaskError,
    TaskExecutor,
};
use serde_json::json;

use crate::bulk_actions::{Bulk, BulkOptions};
use crate::helpers::*;

queue::backend_tests!(Migrator => a_sign_in_waits_for_no_queue_of_batches);

/// People changed by each batch of the load.
const BATCH: u64 = 2_000;

/// The queue's progress so far: people done, summed over every task.
async fn people_done(db: &TestDatabase) -> i64 {
    db.scalar("SELECT CAST(COALESCE(SUM(progress_done), 0) AS BIGINT) FROM queue_task")
        .await
}

/// Sign-ins during a backlog of batches against one on the idle node: the slowest may take
/// twice the idle one (the cores are busy) plus a few batches' time, which is far less than
/// waiting for the batches the workers have queued (sixteen at a time).
async fn a_sign_in_waits_for_no_queue_of_batches(db: TestDatabase) {
    const PEOPLE: u64 = 10_000;
    // Batches that hold SQLite's write lock for a while (about a quarter of a second).
    let options = BulkOptions {
        batch_size: Some(BATCH),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(&db, options).await;
    let options = SeedOptions {
        people: PEOPLE,
        seed: 5,
        coaches: Vec::new(),
    };
    seed_people(&db.conn, &options).await.unwrap();
    // Sign-ins are limited per name: each measured one is a different colleague's.
    let colleagues = ["ana", "ben", "cai", "dee", "eli"];
    for name in colleagues.iter().chain(&["fay"]) {
        add_user(&db, name, Role::Staff).await;
    }
    let started = Instant::now();
    sign_in_as(&bulk.app, "fay").await;
    let idle = started.elapsed();
    let cookie = sign_in(&bulk.app).await;
    // Thirty-two status changes of everyone, back and forth, 2,000 people a batch: more
    // than either backend finishes while the sign-ins run (the test stops them after).
    for round in 0..32 {
        let to_status = if round % 2 == 0 { "INACTIVE" } else { "ACTIVE" };
        let body = json!({"all": true, "to_status": to_status, "reason": "load"});
        bulk.submit("/api/1/caseload/program-status-changes", body, &cookie)
            .await;
    }
    let started = "SELECT COUNT(*) FROM queue_task WHERE progress_done > 0";
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.scalar(started).await == 0 {
        assert!(Instant::now() < deadline, "the batches never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (done_before, load_started) = (people_done(&db).await, Instant::now());
    let mut slowest = Duration::ZERO;
    for name in colleagues {
        let started = Instant::now();
        sign_in_as(&bulk.app, name).await;
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let batches = (people_done(&db).await - done_before) as f64 / BATCH as f64;
    // The time the node took per batch while the sign-ins ran.
    let per_batch = load_started.elapsed().div_f64(batches.max(1.0));
    eprintln!(
        "slowest of 5 sign-ins during batches ({:?}): {slowest:?}; idle {idle:?}; \
         {batches:.0} batches, {per_batch:?} each",
        db.backend
    );
    assert!(
        slowest < idle * 2 + per_batch * 4,
        "a sign-in took {slowest:?}: idle it took {idle:?}, a batch {per_batch:?}"
    );
    let unfinished = bulk
        .store
        .task_count_by_status()
        .await
        .unwrap()
        .iter()
        .filter(|count| !count.status.is_terminal())
        .map(|count| count.count)
        .sum::<i64>();
    assert!(unfinished > 0, "the batches were over before the sign-ins");
    bulk.stop().await;
}

/// Holds one of the workers' connections for `spec.millis`, inside a batch transaction.
struct HoldConnection;

#[async_trait::async_trait]
impl TaskExecutor for HoldConnection {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let millis = ctx.spec()["millis"].as_u64().unwrap_or(0);
        ctx.batch(move |_txn| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(millis)).await;
                Ok(Checkpoint::new(json!({"held": true})))
            })
        })
        .await
    }
}

/// The app as `bulkq serve` wires it: its own pool, and the queue store on that pool.
fn app_on_pool(people: Store) -> axum::Router {
    let options = server::site::leptos_options(
        std::path::Path::new("target/site"),
        "127.0.0.1:0".parse().unwrap(),
    );
    let state = AppState::new(people.db().clone(), people, BulkSettings::default());
    server::web::router(state, options, &server::web::WebOptions::default())
}

/// PostgreSQL: while every connection of the workers' pool is held by a long batch, a
/// sign-in on the dashboard's own pool answers at once; on the workers' pool it would wait
/// for a batch to end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_workers_cannot_take_the_dashboards_connections() {
    let Some(db) = TestDatabase::create::<Migrator>(Backend::Postgres).await else {
        return;
    };
    let owner = add_user(&db, "sam", Role::Staff).await.id;
    add_user(&db, "lee", Role::Staff).await;
    let workers = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
    let people = workers.on_pool(queue::database::connect(&db.url, 4).await.unwrap());
    let mut registry = Registry::new();
    registry.register("test.hold", HoldConnection);
    let config = RuntimeConfig {
        system_id: "budget".into(),
        workers: 8,
        // Every batch may hold a connection, so the workers' pool is really exhausted: the
        // budget of open batches (ADR 0033) is a different guard, tested on its own.
        batches_while_people_write: 0,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::start(config, workers.clone(), registry)
        .await
        .unwrap();
    const HOLD: Duration = Duration::from_secs(4);
    let mut txn = workers.begin_queue().await.unwrap();
    for _ in 0..8 {
        let task = NewTask::new("test.hold", json!({"millis": HOLD.as_millis()}), owner);
        txn.enqueue(task).await.unwrap();
    }
    txn.commit().await.unwrap();
    let holding = "SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'EXECUTING'";
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.scalar(holding).await < 3 {
        assert!(Instant::now() < deadline, "the batches never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let started = Instant::now();
    sign_in_as(&app_on_pool(people), "sam").await;
    let own_pool = started.elapsed();
    let started = Instant::now();
    sign_in_as(&app_on_pool(workers.clone()), "lee").await;
    let shared_pool = started.elapsed();
    eprintln!(
        "sign-in while the workers hold their pool: {own_pool:?} on the dashboard's, {shared_pool:?} on theirs"
    );
    // Waiting for a connection would have meant waiting for a batch to end (most of HOLD).
    assert!(own_pool < HOLD / 2, "{own_pool:?}");
    assert!(
        shared_pool > own_pool,
        "the shared pool was not exhausted: the test shows nothing"
    );
    runtime.shutdown(Duration::from_secs(10)).await;
}
