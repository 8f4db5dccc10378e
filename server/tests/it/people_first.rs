//! People first: while background batches keep the queue busy, a sign-in still answers
//! within a second. On SQLite its session row takes the write slot ahead of the waiting
//! batches; on PostgreSQL the dashboard has connections the workers cannot take.

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

queue::backend_tests!(Migrator => a_sign_in_answers_within_a_second_while_batches_run);

async fn a_sign_in_answers_within_a_second_while_batches_run(db: TestDatabase) {
    const PEOPLE: u64 = 20_000;
    // Batches that hold SQLite's write lock for a while (about a quarter of a second).
    let options = BulkOptions {
        batch_size: Some(2_000),
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
    for name in colleagues {
        add_user(&db, name, Role::Staff).await;
    }
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

    let mut slowest = Duration::ZERO;
    for name in colleagues {
        let started = Instant::now();
        sign_in_as(&bulk.app, name).await;
        slowest = slowest.max(started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "slowest of 5 sign-ins during batches ({:?}): {slowest:?}",
        db.backend
    );
    assert!(
        slowest < Duration::from_secs(1),
        "a sign-in took {slowest:?}"
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
        // budget of open batches (ADR 0046) is a different guard, tested on its own.
        batches_while_people_write: 0,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::start(config, workers.clone(), registry)
        .await
        .unwrap();
    let mut txn = workers.begin_queue().await.unwrap();
    for _ in 0..8 {
        let task = NewTask::new("test.hold", json!({"millis": 4_000}), owner);
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
    assert!(own_pool < Duration::from_secs(1), "{own_pool:?}");
    assert!(
        shared_pool > own_pool,
        "the shared pool was not exhausted: the test shows nothing"
    );
    runtime.shutdown(Duration::from_secs(10)).await;
}
