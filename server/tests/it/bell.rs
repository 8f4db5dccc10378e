//! The bell in the top bar: a user's tasks that ended since they last opened it, their own
//! only; opening it marks what it showed read, and a later end is news again.

use caseload::testing::insert_people;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::{Value, json};

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    the_bell_counts_a_users_ended_tasks_until_opened,
);

/// The bell as `cookie`'s user sees it.
async fn bell(bulk: &Bulk, cookie: &str) -> Value {
    let (response, text) = send(&bulk.app, post_form("/api/notices", "", Some(cookie))).await;
    assert!(
        response.status().is_success(),
        "{} {text}",
        response.status()
    );
    serde_json::from_str(&text).unwrap()
}

/// Opens the bell: marks read up to the end of `task`.
async fn open_bell_up_to(bulk: &Bulk, task: &Value, cookie: &str) {
    let up_to = task["workflow_stopped_date"]
        .as_str()
        .unwrap()
        .replace('+', "%2B");
    let form = format!("up_to={up_to}");
    let (response, text) = send(
        &bulk.app,
        post_form("/api/notices/read", &form, Some(cookie)),
    )
    .await;
    assert!(
        response.status().is_success(),
        "{} {text}",
        response.status()
    );
}

async fn the_bell_counts_a_users_ended_tasks_until_opened(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "belled", 2, None).await;
    let sam = sign_in(&bulk.app).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    assert_eq!(bell(&bulk, &sam).await["unread"], 0);

    let body = json!({"ids": ids_json(&people)});
    let first = bulk
        .submit("/api/1/caseload/watches", body.clone(), &sam)
        .await;
    let first = bulk.finished(&first, &sam).await;
    let shown = bell(&bulk, &sam).await;
    assert_eq!(shown["unread"], 1, "{shown}");
    assert_eq!(shown["tasks"][0]["id"], first["id"]);
    assert_eq!(shown["tasks"][0]["workflow_status"], "COMPLETED");
    // Only one's own tasks ring, admins' included.
    let theirs = bell(&bulk, &ada).await;
    assert_eq!(
        (&theirs["unread"], &theirs["tasks"]),
        (&json!(0), &json!([]))
    );

    open_bell_up_to(&bulk, &shown["tasks"][0], &sam).await;
    let seen = bell(&bulk, &sam).await;
    assert_eq!(seen["unread"], 0, "{seen}");
    assert_eq!(seen["tasks"].as_array().unwrap().len(), 1, "still listed");

    let second = bulk.submit("/api/1/caseload/watches", body, &sam).await;
    let second = bulk.finished(&second, &sam).await;
    let news = bell(&bulk, &sam).await;
    assert_eq!(news["unread"], 1, "{news}");
    assert_eq!(news["tasks"][0]["id"], second["id"]);
    // A tab still showing the older end cannot mark the newer one read.
    open_bell_up_to(&bulk, &first, &sam).await;
    assert_eq!(bell(&bulk, &sam).await["unread"], 1);

    let (response, _) = send(&bulk.app, post_form("/api/notices", "", None)).await;
    assert!(response.status().is_client_error());
    bulk.stop().await;
}
