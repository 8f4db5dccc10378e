use axum::http::StatusCode;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use queue::{NewTask, Store};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::*;

queue::backend_tests!(Migrator => owners_and_admins_see_a_task, lists_are_scoped_and_checked);

/// Enqueues a task owned by `owner` (no runtime runs in these tests, so it stays QUEUED).
async fn enqueue_for(db: &TestDatabase, owner: Uuid) -> Uuid {
    let store = Store::new(db.conn.clone());
    let mut txn = store.begin_queue().await.unwrap();
    let task = txn
        .enqueue(NewTask::new("test.noop", json!({"secret": "spec"}), owner))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    task.id
}

async fn owners_and_admins_see_a_task(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let task_id = enqueue_for(&db, lee.id).await;
    let path = format!("/api/1/tasks/{task_id}");

    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(&app, get(&path, Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    let task: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(task["id"], task_id.to_string());
    assert_eq!(task["workflow_status"], "QUEUED");
    assert_eq!(task["action"], "test.noop");
    assert_eq!(task["links"]["self"], path);
    for hidden in ["execution_state", "workflow_status_desc", "execution_spec"] {
        assert!(
            task.get(hidden).is_none(),
            "{hidden} must not be exposed: {body}"
        );
    }

    let admin_cookie = sign_in_as(&app, "ada").await;
    let (response, body) = send(&app, get(&path, Some(&admin_cookie))).await;
    assert_status(&response, &body, StatusCode::OK);

    // Another staff user cannot even learn that the task exists.
    let sam_cookie = sign_in(&app).await;
    let (response, body) = send(&app, get(&path, Some(&sam_cookie))).await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"],
        "No such task."
    );
    let (response, body) = send(&app, get(&path, None)).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
    let (response, body) = send(&app, get("/api/1/tasks/not-a-uuid", Some(&sam_cookie))).await;
    assert_status(&response, &body, StatusCode::BAD_REQUEST);
    let unknown = format!("/api/1/tasks/{}", Uuid::new_v4());
    let (response, body) = send(&app, get(&unknown, Some(&admin_cookie))).await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
}

async fn lists_are_scoped_and_checked(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    for _ in 0..3 {
        enqueue_for(&db, lee.id).await;
    }
    let total = |body: &str| serde_json::from_str::<Value>(body).unwrap()["total"].clone();

    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(&app, get("/api/1/tasks?mine", Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(total(&body), 3);
    let (_, body) = send(
        &app,
        get("/api/1/tasks?mine&limit=2&offset=2", Some(&lee_cookie)),
    )
    .await;
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            page["tasks"].as_array().unwrap().len(),
            page["total"].clone()
        ),
        (1, json!(3))
    );

    // Staff see only their own tasks, with or without `mine`; admins see everyone's.
    let sam_cookie = sign_in(&app).await;
    let (_, body) = send(&app, get("/api/1/tasks", Some(&sam_cookie))).await;
    assert_eq!(total(&body), 0);
    let admin_cookie = sign_in_as(&app, "ada").await;
    let (_, body) = send(&app, get("/api/1/tasks", Some(&admin_cookie))).await;
    assert_eq!(total(&body), 3);
    let (_, body) = send(&app, get("/api/1/tasks?mine", Some(&admin_cookie))).await;
    assert_eq!(total(&body), 0);
    let (_, body) = send(&app, get("/api/1/tasks?status=QUEUED", Some(&admin_cookie))).await;
    assert_eq!(total(&body), 3);

    let (response, body) = send(&app, get("/api/1/tasks?limit=0", Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("\"limit\""), "{body}");
    let (response, body) = send(&app, get("/api/1/tasks?status=BOGUS", Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::BAD_REQUEST);
}
