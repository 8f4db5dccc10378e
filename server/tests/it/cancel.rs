//! Cancelling a task: its owner (or an admin) stops it before it finishes. A waiting task
//! never starts; a running one stops at a batch boundary with exactly its committed work.

use std::time::Duration;

use axum::http::StatusCode;
use caseload::store::entity::program_status_change;
use caseload::testing::insert_people;
use caseload::users::Role;
use chrono::Utc;
use migration::Migrator;
use queue::TaskStatus;
use queue::testing::{TestDatabase, wait_until};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::bulk_actions::{Bulk, BulkOptions, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    owners_cancel_their_waiting_tasks,
    a_running_task_stops_with_what_it_committed,
    a_running_export_stops_with_the_rows_it_committed,
);

/// `POST /api/1/tasks/{id}/cancel` as whoever holds `cookie`.
async fn cancel(bulk: &Bulk, task: &Value, cookie: &str) -> (StatusCode, Value) {
    let path = format!("{}/cancel", task["links"]["self"].as_str().unwrap());
    let (response, text) = send(&bulk.app, post_json(&path, "", Some(cookie))).await;
    (response.status(), serde_json::from_str(&text).unwrap())
}

fn task_id(task: &Value) -> Uuid {
    task["id"].as_str().unwrap().parse().unwrap()
}

async fn owners_cancel_their_waiting_tasks(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "other", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "later", 3, None).await;
    let sam = sign_in(&bulk.app).await;
    let other = sign_in_as(&bulk.app, "other").await;
    let tomorrow = (Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    let body = json!({"ids": ids_json(&people), "run_at": tomorrow});

    let waiting = bulk
        .submit("/api/1/caseload/watches", body.clone(), &sam)
        .await;
    // Someone else's task cannot even be confirmed to exist.
    let (status, _) = cancel(&bulk, &waiting, &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, task) = cancel(&bulk, &waiting, &sam).await;
    assert_eq!(status, StatusCode::OK, "{task}");
    assert_eq!(task["workflow_status"], "ABANDONED");
    assert_eq!(task["progress_done"], 0);
    let history = bulk.store.task_history(task_id(&waiting)).await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(
        (last.status, last.actor.as_str()),
        (TaskStatus::Abandoned, "sam")
    );
    // Once finished there is nothing to cancel.
    let (status, body_of_409) = cancel(&bulk, &waiting, &sam).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body_of_409}");

    // The dashboard's door: the server function, for the owner.
    let second = bulk
        .submit("/api/1/caseload/watches", body.clone(), &sam)
        .await;
    let form = format!("id={}&act=cancel", task_id(&second));
    let (response, text) = send(&bulk.app, post_form("/api/act_on_task", &form, Some(&sam))).await;
    assert_status(&response, &text, StatusCode::OK);
    assert_eq!(text, "true");

    // An admin cancels anyone's.
    let theirs = bulk.submit("/api/1/caseload/watches", body, &other).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    let (status, task) = cancel(&bulk, &theirs, &ada).await;
    assert_eq!(status, StatusCode::OK, "{task}");
    assert_eq!(task["workflow_status"], "ABANDONED");

    // None of them ran.
    let watches: i64 = db.scalar("SELECT COUNT(*) FROM person_watch").await;
    assert_eq!(watches, 0);
    bulk.stop().await;
}

/// Starts the action at `path` with `body` on 5,000 people, ten per batch, has its owner
/// cancel it once 100 are done, and returns the node, the task's id and its final view,
/// checked to have stopped part way.
async fn cancelled_part_way(db: &TestDatabase, path: &str, body: Value) -> (Bulk, Uuid, Value) {
    let options = BulkOptions {
        batch_size: Some(10),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(db, options).await;
    let sam = sign_in(&bulk.app).await;
    let body = match body {
        Value::Object(mut fields) => {
            let people = insert_people(&db.conn, "running", PEOPLE as usize, None).await;
            fields.insert("ids".into(), ids_json(&people));
            Value::Object(fields)
        }
        other => other,
    };
    let reference = bulk.submit(path, body, &sam).await;
    let id = task_id(&reference);

    // Once some batches have committed, its owner asks it to stop.
    let mut events = bulk.store.subscribe().await.unwrap();
    wait_until(
        &mut events,
        Duration::from_secs(60),
        "a few batches committed",
        async || {
            bulk.store
                .task_get(id)
                .await
                .unwrap()
                .unwrap()
                .progress_done
                >= 100
        },
    )
    .await;
    let (status, task) = cancel(&bulk, &reference, &sam).await;
    assert_eq!(status, StatusCode::OK, "{task}");

    let task = bulk.finished(&reference, &sam).await;
    assert_eq!(task["workflow_status"], "ABANDONED", "{task}");
    let done = task["progress_done"].as_u64().unwrap();
    assert!((100..PEOPLE).contains(&done), "it stopped part way: {task}");
    (bulk, id, task)
}

/// People each running cancel test acts on.
const PEOPLE: u64 = 5_000;

async fn a_running_task_stops_with_what_it_committed(db: TestDatabase) {
    let body = json!({"to_status": "INACTIVE", "reason": "stop me"});
    let (bulk, id, task) =
        cancelled_part_way(&db, "/api/1/caseload/program-status-changes", body).await;
    // Exactly the committed batches took effect, each person once, and the report says so.
    let done = task["progress_done"].as_u64().unwrap();
    let report = &task["report"];
    let changed = report["changed"].as_u64().unwrap();
    assert_eq!(
        changed + report["unchanged"].as_u64().unwrap(),
        done,
        "{report}"
    );
    let history = program_status_change::Entity::find()
        .filter(program_status_change::Column::TaskId.eq(id))
        .count(&db.conn)
        .await
        .unwrap();
    assert_eq!(history, changed);
    bulk.stop().await;
}

/// A cancelled export keeps the rows of its committed batches, each once, and no more: its
/// file is cut to what its checkpoint says.
async fn a_running_export_stops_with_the_rows_it_committed(db: TestDatabase) {
    let body = json!({"columns": ["id", "last_name"]});
    let (bulk, id, task) = cancelled_part_way(&db, "/api/1/caseload/exports", body).await;
    let done = task["progress_done"].as_u64().unwrap();
    assert_eq!(task["report"]["changed"].as_u64(), Some(done), "{task}");
    let exports = bulk.stop_keeping_exports().await;
    let csv = std::fs::read_to_string(exports.path().join(format!("{id}.csv"))).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    let distinct: std::collections::HashSet<&str> = rows.iter().copied().collect();
    assert_eq!(rows.len() as u64, done, "one row per person done");
    assert_eq!(distinct.len(), rows.len(), "no row twice");
}
