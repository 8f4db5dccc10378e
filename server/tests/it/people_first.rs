//! People first: while background batches keep the queue busy, a sign-in still answers
//! within a second. On SQLite its session row takes the write slot ahead of the waiting
//! batches; on PostgreSQL nothing queues it behind them.

use std::time::{Duration, Instant};

use caseload::seed::{SeedOptions, seed_people};
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
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
    // Eight status changes of everyone, back and forth: 80 batches of 2,000 people.
    for round in 0..8 {
        let to_status = if round % 2 == 0 { "INACTIVE" } else { "ACTIVE" };
        let body = json!({"all": true, "to_status": to_status, "reason": "load"});
        bulk.submit("/api/1/caseload/program-status-changes", body, &cookie)
            .await;
    }
    let running = "SELECT COUNT(*) FROM queue_task WHERE progress_done > 0 \
                   AND workflow_status = 'EXECUTING'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.scalar(running).await == 0 {
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
