//! Finding tasks by what they did: the words of their request (an email's subject, a
//! status, a reason), case aside and wildcards literal; admins also search errors, which
//! staff never see.

use axum::http::StatusCode;
use caseload::testing::insert_people;
use caseload::users::Role;
use chrono::{Duration, Utc};
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    tasks_are_found_by_the_words_of_their_request,
);

/// The ids of the tasks `GET /api/1/tasks?<query>` lists for `cookie`'s user.
async fn found(bulk: &Bulk, query: &str, cookie: &str) -> Vec<String> {
    let (response, text) = send(
        &bulk.app,
        get(&format!("/api/1/tasks?{query}"), Some(cookie)),
    )
    .await;
    assert_status(&response, &text, StatusCode::OK);
    let page: Value = serde_json::from_str(&text).unwrap();
    page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn tasks_are_found_by_the_words_of_their_request(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "searched", 2, None).await;
    let sam = sign_in(&bulk.app).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    // Waiting until tomorrow: the search reads requests, not results.
    let tomorrow = (Utc::now() + Duration::days(1)).to_rfc3339();
    let ids = ids_json(&people);
    let submit = async |path: &str, mut body: Value| {
        body["ids"] = ids.clone();
        body["run_at"] = json!(tomorrow);
        let task = bulk.submit(path, body, &sam).await;
        task["id"].as_str().unwrap().to_owned()
    };
    let email = submit(
        "/api/1/caseload/emails",
        json!({"subject": "Spring Fair: 50% off", "body": "Come along."}),
    )
    .await;
    let status = submit(
        "/api/1/caseload/program-status-changes",
        json!({"to_status": "INACTIVE", "reason": "moved away"}),
    )
    .await;
    let watch = submit("/api/1/caseload/watches", json!({})).await;
    let error = Statement::from_sql_and_values(
        db.conn.get_database_backend(),
        "UPDATE queue_task SET workflow_status_desc = $1 WHERE id = $2",
        [
            "relay said: Quota EXCEEDED".into(),
            watch.parse::<uuid::Uuid>().unwrap().into(),
        ],
    );
    db.conn.execute_raw(error).await.unwrap();

    assert_eq!(
        found(&bulk, "text=spring%20FAIR", &sam).await,
        [email.as_str()]
    );
    assert_eq!(found(&bulk, "text=50%25", &sam).await, [email.as_str()]);
    assert_eq!(
        found(&bulk, "text=%25", &sam).await,
        [email],
        "% is literal"
    );
    assert_eq!(found(&bulk, "text=inactive", &sam).await, [status.as_str()]);
    assert_eq!(
        found(
            &bulk,
            "text=Moved%20Away&action=caseload.program_status_change",
            &sam
        )
        .await,
        [status]
    );
    assert!(
        found(&bulk, "text=quota", &sam).await.is_empty(),
        "staff never search errors"
    );
    assert_eq!(found(&bulk, "text=quota", &ada).await, [watch.as_str()]);
    assert!(
        found(&bulk, "text=nothing%20like%20this", &ada)
            .await
            .is_empty()
    );

    let long = "x".repeat(201);
    let (response, text) = send(
        &bulk.app,
        get(&format!("/api/1/tasks?text={long}"), Some(&sam)),
    )
    .await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text.contains("\"text\""), "{text}");
    bulk.stop().await;
}
