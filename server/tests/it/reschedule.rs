//! Steering a waiting task: its owner (or an admin) runs it now, or moves it to another
//! time or priority; staff keep to the priorities the dashboard offers.

use axum::http::StatusCode;
use caseload::testing::insert_people;
use caseload::users::Role;
use chrono::{DateTime, Duration, Utc};
use migration::Migrator;
use queue::TaskStatus;
use queue::testing::TestDatabase;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    owners_and_admins_steer_waiting_tasks,
);

/// `POST /api/1/tasks/{id}/schedule` with `body` as whoever holds `cookie`.
async fn reschedule(bulk: &Bulk, task: &Value, body: Value, cookie: &str) -> (StatusCode, Value) {
    let path = format!("{}/schedule", task["links"]["self"].as_str().unwrap());
    let request = post_json(&path, &body.to_string(), Some(cookie));
    let (response, text) = send(&bulk.app, request).await;
    (response.status(), serde_json::from_str(&text).unwrap())
}

fn task_id(task: &Value) -> Uuid {
    task["id"].as_str().unwrap().parse().unwrap()
}

fn run_at(task: &Value) -> DateTime<Utc> {
    task["run_at"].as_str().unwrap().parse().unwrap()
}

async fn owners_and_admins_steer_waiting_tasks(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "other", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "steered", 3, None).await;
    let sam = sign_in(&bulk.app).await;
    let other = sign_in_as(&bulk.app, "other").await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    let tomorrow = Utc::now() + Duration::days(1);
    let body = json!({"ids": ids_json(&people), "run_at": tomorrow.to_rfc3339()});
    let waiting = bulk.submit("/api/1/caseload/watches", body, &sam).await;

    // Someone else's task cannot even be confirmed to exist.
    let (status, _) = reschedule(&bulk, &waiting, json!({"priority": 5}), &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Bad steers are refused field by field, and change nothing.
    let too_far = Utc::now() + Duration::days(400);
    let refusals = [
        (
            json!({"priority": 50}),
            "priority",
            "from -10 to 10 for staff",
        ),
        (
            json!({"run_at": too_far.to_rfc3339()}),
            "run_at",
            "days ahead",
        ),
        (json!({}), "run_at", "give a time, a priority or both"),
    ];
    for (body, field, words) in refusals {
        let (status, error) = reschedule(&bulk, &waiting, body.clone(), &sam).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {error}");
        let message = error["fields"][field].as_str().unwrap_or_default();
        assert!(message.contains(words), "{body}: {error}");
    }
    let (status, error) = reschedule(&bulk, &waiting, json!({"when": "now"}), &sam).await;
    assert!(status.is_client_error(), "an unknown field: {error}");

    // The owner moves it a day later and raises it; the history says who and where.
    let later = tomorrow + Duration::days(1);
    let steer = json!({"run_at": later.to_rfc3339(), "priority": 10});
    let (status, moved) = reschedule(&bulk, &waiting, steer, &sam).await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert_eq!(moved["workflow_status"], "QUEUED");
    assert_eq!(moved["priority"], 10);
    assert_eq!(run_at(&moved).timestamp(), later.timestamp());
    let history = bulk.store.task_history(task_id(&waiting)).await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(
        (last.status, last.actor.as_str()),
        (TaskStatus::Queued, "sam")
    );
    let message = last.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("rescheduled by sam: run at"),
        "{message}"
    );
    assert!(message.ends_with("priority 10"), "{message}");

    // An admin goes beyond the staff range, through the dashboard's door.
    let call = json!({"id": task_id(&waiting), "request": {"priority": 50}});
    let request = post_json("/api/reschedule_task", &call.to_string(), Some(&ada));
    let (response, text) = send(&bulk.app, request).await;
    assert_status(&response, &text, StatusCode::OK);
    let row = bulk
        .store
        .task_get(task_id(&waiting))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.priority, 50);

    // Run now: a time already past means at once, and the task runs.
    let past = Utc::now() - Duration::hours(1);
    let (status, due) = reschedule(&bulk, &waiting, json!({"run_at": past}), &sam).await;
    assert_eq!(status, StatusCode::OK, "{due}");
    assert!(run_at(&due) > past, "a past time is now: {due}");
    let done = bulk.finished(&waiting, &sam).await;
    assert_eq!(done["workflow_status"], "COMPLETED", "{done}");
    let watches: i64 = db.scalar("SELECT COUNT(*) FROM person_watch").await;
    assert_eq!(watches, 3);

    // Once it has run there is nothing to steer.
    let (status, error) = reschedule(&bulk, &waiting, json!({"priority": 1}), &sam).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    bulk.stop().await;
}
