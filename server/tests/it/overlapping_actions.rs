//! Bulk actions over the same people at once: they all finish, and each changes a person at
//! most once. On PostgreSQL a task runs two batches at a time, so two tasks walking the
//! same people in opposite orders hold rows the other's batches want.

use std::time::Duration;

use caseload::store::entity::program_status_change;
use caseload::testing::insert_people;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;
use uuid::Uuid;

use crate::bulk_actions::{Bulk, BulkOptions, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    opposite_walks_over_the_same_people_all_finish,
    overlapping_watches_count_each_person_once,
);

async fn opposite_walks_over_the_same_people_all_finish(db: TestDatabase) {
    const TASKS: usize = 12;
    let options = BulkOptions {
        batch_size: Some(50),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(&db, options).await;
    let mut people = insert_people(&db.conn, "shared", 1_000, None).await;
    let cookie = sign_in(&bulk.app).await;
    let mut references = Vec::new();
    for task in 0..TASKS {
        // Every other task walks the list backwards, and moves people the other way.
        people.reverse();
        let to_status = if task % 2 == 0 { "INACTIVE" } else { "ACTIVE" };
        let body = json!({"ids": ids_json(&people), "to_status": to_status, "reason": "overlap"});
        references.push(
            bulk.submit("/api/1/caseload/program-status-changes", body, &cookie)
                .await,
        );
    }
    for reference in &references {
        let task = tokio::time::timeout(Duration::from_secs(90), bulk.finished(reference, &cookie))
            .await
            .expect("the overlapping tasks are stuck waiting for each other");
        assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
        let id: Uuid = task["id"].as_str().unwrap().parse().unwrap();
        let history = program_status_change::Entity::find()
            .filter(program_status_change::Column::TaskId.eq(id))
            .count(&db.conn)
            .await
            .unwrap();
        assert_eq!(Some(history), task["report"]["changed"].as_u64(), "{task}");
        assert_eq!(task["progress_done"], 1_000, "{task}");
    }
    bulk.stop().await;
}

/// Watches, then unwatches, of the same people by one user at once, half walking backwards:
/// every task finishes, and across them each person is reported watched (and unwatched)
/// exactly once, although on PostgreSQL each task runs two batches at a time.
async fn overlapping_watches_count_each_person_once(db: TestDatabase) {
    const TASKS: usize = 6;
    const PEOPLE: u64 = 600;
    let options = BulkOptions {
        batch_size: Some(40),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(&db, options).await;
    let mut people = insert_people(&db.conn, "watched", PEOPLE as usize, None).await;
    let cookie = sign_in(&bulk.app).await;
    for path in ["/api/1/caseload/watches", "/api/1/caseload/unwatches"] {
        let mut references = Vec::new();
        for _ in 0..TASKS {
            people.reverse();
            let body = json!({"ids": ids_json(&people)});
            references.push(bulk.submit(path, body, &cookie).await);
        }
        let mut changed = 0;
        for reference in &references {
            let task =
                tokio::time::timeout(Duration::from_secs(90), bulk.finished(reference, &cookie))
                    .await
                    .expect("the overlapping tasks are stuck waiting for each other");
            assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
            let report = &task["report"];
            let sum = |field: &str| report[field].as_u64().unwrap_or_default();
            assert_eq!(sum("changed") + sum("unchanged"), PEOPLE, "{task}");
            changed += sum("changed");
        }
        assert_eq!(
            changed, PEOPLE,
            "{path}: each person changed by exactly one task"
        );
    }
    let watches: i64 = db.scalar("SELECT COUNT(*) FROM person_watch").await;
    assert_eq!(watches, 0);
    bulk.stop().await;
}
