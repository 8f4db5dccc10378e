//! Export files live no longer than their retention or their task: a download after the
//! retention answers 410, the task says "expired", and a periodic job deletes the file (and
//! any file whose task is gone), leaving other files alone.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use caseload::testing::insert_people;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::bulk_actions::{Bulk, BulkOptions};
use crate::helpers::*;

queue::backend_tests!(Migrator => no_export_file_outlives_its_retention_or_its_task);

/// Waits up to 30 s for `gone` to hold.
async fn eventually(what: &str, gone: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gone() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn no_export_file_outlives_its_retention_or_its_task(db: TestDatabase) {
    let retention = Duration::from_secs(4);
    let options = BulkOptions {
        export_retention: Some(retention),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(&db, options).await;
    add_user(&db, "ada", Role::Admin).await;
    insert_people(&db.conn, "expiring", 3, None).await;
    let cookie = sign_in(&bulk.app).await;
    let exports = bulk.exports.path().to_owned();
    // A file whose task was pruned long ago, and a file that is not an export at all.
    let orphan = exports.join(format!("{}.csv", Uuid::now_v7()));
    std::fs::write(&orphan, "id\n").unwrap();
    let notes = exports.join("README.txt");
    std::fs::write(&notes, "not ours").unwrap();

    let reference = bulk
        .submit(
            "/api/1/caseload/exports",
            json!({"query": {"name": "expiring"}}),
            &cookie,
        )
        .await;
    let id = reference["id"].as_str().unwrap().to_owned();
    let file = exports.join(format!("{id}.csv"));
    let link = format!("/api/1/caseload/exports/{id}/file");
    bulk.finished(&reference, &cookie).await;
    let (response, csv) = send(&bulk.app, get(&link, Some(&cookie))).await;
    assert_status(&response, &csv, StatusCode::OK);
    assert_eq!(csv.lines().count(), 4);
    let detail = task_detail(&bulk, &id, &cookie).await;
    assert!(
        detail["task"]["export_file"]["state"] == "ready"
            && detail["task"]["export_file"]["until"].is_string(),
        "{detail}"
    );

    let admin = sign_in_as(&bulk.app, "ada").await;
    let health = queue_health(&bulk, &admin).await;
    assert!(health["export_files"].as_u64().unwrap() >= 1, "{health}");
    assert!(health["export_bytes"].as_u64().unwrap() > 0);

    eventually("the orphan is deleted", || !orphan.exists()).await;
    eventually("the expired export is deleted", || !file.exists()).await;
    assert!(notes.exists(), "files that are not exports are left alone");

    let (response, body) = send(&bulk.app, get(&link, Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::GONE);
    assert!(body.contains("expired"), "{body}");
    let detail = task_detail(&bulk, &id, &cookie).await;
    assert!(
        detail["task"]["export_file"]["state"] == "expired"
            && detail["task"]["export_file"]["at"].is_string(),
        "{detail}"
    );
    // The task's view no longer links to a file that is gone.
    assert!(detail["task"]["links"]["file"].is_null(), "{detail}");
    let health = queue_health(&bulk, &admin).await;
    assert_eq!(health["export_files"], 0, "{health}");
    bulk.stop().await;
}

async fn task_detail(bulk: &Bulk, id: &str, cookie: &str) -> Value {
    let request = post_form("/api/task_detail", &format!("id={id}"), Some(cookie));
    let (response, body) = send(&bulk.app, request).await;
    assert_status(&response, &body, StatusCode::OK);
    serde_json::from_str(&body).unwrap()
}

async fn queue_health(bulk: &Bulk, cookie: &str) -> Value {
    let request = post_form("/api/queue_health", "action=", Some(cookie));
    let (response, body) = send(&bulk.app, request).await;
    assert_status(&response, &body, StatusCode::OK);
    serde_json::from_str(&body).unwrap()
}
