//! Idempotent submissions: an `Idempotency-Key` sent again, however often and however
//! concurrently, makes one task and one email per person.

use axum::http::StatusCode;
use caseload::testing::insert_people;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::{Value, json};

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator => a_repeated_key_makes_one_task_and_one_email_per_person);

/// POSTs `body` to the email endpoint with `key` and returns the status and reply.
async fn send_email(bulk: &Bulk, cookie: &str, key: &str, body: &Value) -> (StatusCode, Value) {
    let mut request = post_json("/api/1/caseload/emails", &body.to_string(), Some(cookie));
    request
        .headers_mut()
        .insert("idempotency-key", key.parse().unwrap());
    let (response, text) = send(&bulk.app, request).await;
    let reply = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
    (response.status(), reply)
}

async fn a_repeated_key_makes_one_task_and_one_email_per_person(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "once", 3, None).await;
    let cookie = sign_in(&bulk.app).await;
    let body = json!({"ids": ids_json(&people), "subject": "Once", "body": "Only once."});
    let key = "3f0c2a8e-5b7d-4e1a-9c6b-2d8f7a1e0b44";

    let replies =
        futures_util::future::join_all((0..10).map(|_| send_email(&bulk, &cookie, key, &body)))
            .await;
    let first = replies[0].1["id"].clone();
    for (status, reply) in &replies {
        assert_eq!(*status, StatusCode::ACCEPTED, "{reply}");
        assert_eq!(reply["id"], first, "every reply names the one task");
    }
    assert_eq!(db.scalar("SELECT COUNT(*) FROM queue_task").await, 1);
    let task = bulk.finished(&replies[0].1, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(bulk.smtp.received().len(), 3, "one message per person");

    // Finished, the key still names its task.
    let (status, reply) = send_email(&bulk, &cookie, key, &body).await;
    assert_eq!((status, &reply["id"]), (StatusCode::ACCEPTED, &first));
    // The same key with another request is the client's mistake.
    let other = json!({"ids": ids_json(&people), "subject": "Twice?", "body": "No."});
    let (status, reply) = send_email(&bulk, &cookie, key, &other).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    assert!(reply["fields"]["Idempotency-Key"].is_string(), "{reply}");
    // So is the same request made urgent or scheduled: the schedule is part of the body.
    let mut urgent = body.clone();
    urgent["priority"] = json!(10);
    let (status, reply) = send_email(&bulk, &cookie, key, &urgent).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    // A key belongs to its sender: another user's same key is another submission.
    add_user(&db, "colleague", Role::Staff).await;
    let colleague = sign_in_as(&bulk.app, "colleague").await;
    let (status, reply) = send_email(&bulk, &colleague, key, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{reply}");
    assert_ne!(reply["id"], first);
    // A key that is not one is refused before anything happens.
    let (status, reply) = send_email(&bulk, &cookie, "two words", &body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM queue_task").await, 2);
    bulk.stop().await;
}
