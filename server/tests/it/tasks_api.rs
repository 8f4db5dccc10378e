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
    enqueue_through(&Store::new(db.conn.clone()), owner).await
}

async fn enqueue_through(store: &Store, owner: Uuid) -> Uuid {
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
        "Task not found."
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

queue::backend_tests!(Migrator => my_tasks_lists_only_mine, the_task_stream_pushes_my_changes);

async fn my_tasks_lists_only_mine(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    let task_id = enqueue_for(&db, lee.id).await;

    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(
        &app,
        post_form("/api/my_tasks", "page=0", Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["total"], 1);
    assert_eq!(page["tasks"][0]["id"], task_id.to_string());
    assert_eq!(page["tasks"][0]["workflow_status"], "QUEUED");

    let sam_cookie = sign_in(&app).await;
    let (_, body) = send(
        &app,
        post_form("/api/my_tasks", "page=0", Some(&sam_cookie)),
    )
    .await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["total"], 0);
    let (response, body) = send(&app, post_form("/api/my_tasks", "page=0", None)).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
}

async fn the_task_stream_pushes_my_changes(db: TestDatabase) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    // Events are announced by the `Store` that commits them, so enqueue through the router's.
    let store = Store::new(db.conn.clone());
    let app = app_with_store(&db, store.clone()).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    let other = add_user(&db, "other", Role::Staff).await;
    let lee_cookie = sign_in_as(&app, "lee").await;

    let (response, _) = send(&app, get("/api/1/task-events", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    let response = app
        .clone()
        .oneshot(get("/api/1/task-events", Some(&lee_cookie)))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();

    // Another user's task is not sent to lee; lee's own is, as soon as it commits.
    enqueue_through(&store, other.id).await;
    let mine = enqueue_through(&store, lee.id).await;
    let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
        .await
        .expect("an event arrives")
        .unwrap()
        .unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    assert!(text.starts_with("event: task\n"), "{text}");
    assert!(text.contains(&mine.to_string()), "{text}");
    assert!(text.contains("\"status\":\"QUEUED\""), "{text}");
}

queue::backend_tests!(Migrator => task_detail_shows_history_and_hides_errors_from_staff, admins_repair_tasks_idempotently);

async fn task_detail_shows_history_and_hides_errors_from_staff(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let task_id = enqueue_for(&db, lee.id).await;
    let form = format!("id={task_id}");

    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(
        &app,
        post_form("/api/task_detail", &form, Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let detail: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(detail["task"]["workflow_status"], "QUEUED");
    assert_eq!(detail["can_repair"], false);
    assert_eq!(detail["history"][0]["status"], "QUEUED");
    assert_eq!(detail["spec_summary"][0], json!(["secret", "spec"]));

    let sam_cookie = sign_in(&app).await;
    let (response, body) = send(
        &app,
        post_form("/api/task_detail", &form, Some(&sam_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
    let (response, body) = send(&app, post_form("/api/task_detail", &form, None)).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);

    // An admin's abandon reason is in the history: admins see it, the owner does not.
    let admin_cookie = sign_in_as(&app, "ada").await;
    let abandon = format!("id={task_id}&reason=duplicate+request");
    let (response, body) = send(
        &app,
        post_form("/api/abandon_task", &abandon, Some(&admin_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let (_, body) = send(
        &app,
        post_form("/api/task_detail", &form, Some(&admin_cookie)),
    )
    .await;
    let seen_by_admin: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(seen_by_admin["task"]["workflow_status"], "ABANDONED");
    assert_eq!(seen_by_admin["can_repair"], true);
    assert!(
        seen_by_admin["error_detail"]
            .as_str()
            .unwrap()
            .contains("duplicate request"),
        "{body}"
    );
    let (_, body) = send(
        &app,
        post_form("/api/task_detail", &form, Some(&lee_cookie)),
    )
    .await;
    let seen_by_owner: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(seen_by_owner["task"]["workflow_status"], "ABANDONED");
    assert!(seen_by_owner["error_detail"].is_null(), "{body}");
    assert!(
        seen_by_owner["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["message"].is_null()),
        "{body}"
    );
}

async fn admins_repair_tasks_idempotently(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let task_id = enqueue_for(&db, lee.id).await;
    let id_form = format!("id={task_id}");
    let abandon = format!("id={task_id}&reason=stuck");

    // Staff cannot repair, not even their own tasks.
    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(
        &app,
        post_form("/api/abandon_task", &abandon, Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(
        &app,
        post_form("/api/retry_task", &id_form, Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);

    let admin_cookie = sign_in_as(&app, "ada").await;
    let empty_reason = format!("id={task_id}&reason=+");
    let (response, body) = send(
        &app,
        post_form("/api/abandon_task", &empty_reason, Some(&admin_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    // A queued task cannot be retried (nothing to retry) but can be abandoned, once.
    let (_, body) = send(
        &app,
        post_form("/api/retry_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    let (_, body) = send(
        &app,
        post_form("/api/abandon_task", &abandon, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "true");
    let (_, body) = send(
        &app,
        post_form("/api/abandon_task", &abandon, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    // Retry puts it back in the queue, once.
    let (_, body) = send(
        &app,
        post_form("/api/retry_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "true");
    let (_, body) = send(
        &app,
        post_form("/api/retry_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    let queued = "SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'QUEUED'";
    assert_eq!(db.scalar(queued).await, 1);

    let unknown = format!("id={}", Uuid::new_v4());
    let (response, body) = send(
        &app,
        post_form("/api/retry_task", &unknown, Some(&admin_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
}
