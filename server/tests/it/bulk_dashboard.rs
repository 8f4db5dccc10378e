//! The dashboard's bulk-action server functions through the real router: the confirmation
//! count, and submissions that are enqueued or refused with a 422 naming the field.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use caseload::testing::insert_people;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::{Value, json};

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    the_confirmation_counts_what_the_action_will_reach,
    submissions_are_enqueued_or_refused_by_field,
);

/// A JSON call of a server function, as the dashboard's WASM makes it.
fn call(endpoint: &str, body: Value, cookie: &str) -> Request<Body> {
    Request::post(format!("/api/{endpoint}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .header(header::COOKIE, cookie)
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Everyone a search for `name` matches, as the dashboard sends it: the filter the search ran.
fn all_matching(name: &str) -> Value {
    json!({"query": {"name": name}})
}

async fn the_confirmation_counts_what_the_action_will_reach(db: TestDatabase) {
    let app = app(&db).await;
    let colleague = add_user(&db, "colleague", Role::Staff).await;
    insert_people(&db.conn, "Free", 7, None).await;
    insert_people(&db.conn, "Theirs", 5, Some(colleague.id)).await;
    let cookie = sign_in(&app).await;
    let count = async |target: Value| {
        let (response, body) = send(
            &app,
            call("preview_bulk_target", json!({"target": target}), &cookie),
        )
        .await;
        assert_status(&response, &body, StatusCode::OK);
        body.parse::<u64>().unwrap()
    };
    // All matching counts only the people Sam may act on.
    assert_eq!(count(json!({"query": {}})).await, 7);
    assert_eq!(count(all_matching("theirs")).await, 0);
    // Hand-picked ids count once each.
    let id = uuid::Uuid::now_v7();
    assert_eq!(count(json!({"ids": [id, id]})).await, 1);
}

async fn submissions_are_enqueued_or_refused_by_field(db: TestDatabase) {
    let app = app(&db).await;
    let people = insert_people(&db.conn, "Mail", 3, None).await;
    let cookie = sign_in(&app).await;
    // The JSON API's own request, over the people ticked.
    let submit = async |action: &str, mut fields: Value| {
        fields["ids"] = json!(people);
        let body = json!({"request": {action: fields}});
        send(&app, call("submit_bulk_action", body, &cookie)).await
    };

    let (response, body) = submit(
        "email",
        json!({"subject": "Hello", "body": "Hi there.", "cc": ["not-an-address"]}),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("Cc"), "{body}");
    let (response, body) = submit(
        "program_status_change",
        json!({"to_status": "NOPE", "reason": ""}),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("status") && body.contains("Reason"), "{body}");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM queue_task").await, 0);

    let (response, body) = submit("watch", json!({})).await;
    assert_status(&response, &body, StatusCode::OK);
    let task: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(task["label"], "Watch");
    assert_eq!(
        task["href"],
        format!("/tasks/{}", task["id"].as_str().unwrap())
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM queue_task").await, 1);
}
