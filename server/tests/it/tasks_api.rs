use axum::http::StatusCode;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use queue::{NewTask, Store};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    owners_and_admins_see_a_task,
    lists_are_scoped_and_checked,
    the_explorer_filters_and_acts_on_all_matching,
);

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
    // Pages follow `next`: two, then the last one, and no `next` after it.
    let (_, body) = send(&app, get("/api/1/tasks?mine&limit=2", Some(&lee_cookie))).await;
    let first: Value = serde_json::from_str(&body).unwrap();
    let next = first["next"].as_str().expect("a next page").to_owned();
    let (_, body) = send(
        &app,
        get(
            &format!("/api/1/tasks?mine&limit=2&before={next}"),
            Some(&lee_cookie),
        ),
    )
    .await;
    let last: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (
            first["tasks"].as_array().unwrap().len(),
            last["tasks"].as_array().unwrap().len(),
            last["total"].clone(),
            last["more"].clone(),
        ),
        (2, 1, json!(3), json!(false))
    );
    assert!(last.get("next").is_none(), "{body}");
    assert_ne!(first["tasks"][1]["id"], last["tasks"][0]["id"]);

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
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("\"status\""), "{body}");
    // Staff cannot look at someone else's tasks by naming them.
    let (response, body) = send(&app, get("/api/1/tasks?owner=ada", Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("\"owner\""), "{body}");
}

queue::backend_tests!(Migrator => my_tasks_lists_only_mine, the_task_stream_pushes_my_changes);

/// The dashboard's call for the first page of "My tasks".
const MY_FIRST_PAGE: &str = r#"{"query": {"mine": ""}}"#;

async fn my_tasks_lists_only_mine(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    let task_id = enqueue_for(&db, lee.id).await;

    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(
        &app,
        post_json("/api/list_tasks", MY_FIRST_PAGE, Some(&lee_cookie)),
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
        post_json("/api/list_tasks", MY_FIRST_PAGE, Some(&sam_cookie)),
    )
    .await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["total"], 0);
    let (response, body) = send(&app, post_json("/api/list_tasks", MY_FIRST_PAGE, None)).await;
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
    let abandon = format!("id={task_id}&act=abandon&reason=duplicate+request");
    let (response, body) = send(
        &app,
        post_form("/api/act_on_task", &abandon, Some(&admin_cookie)),
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
    let id_form = format!("id={task_id}&act=retry");
    let abandon = format!("id={task_id}&act=abandon&reason=stuck");

    // Staff cannot repair, not even their own tasks.
    let lee_cookie = sign_in_as(&app, "lee").await;
    let (response, body) = send(
        &app,
        post_form("/api/act_on_task", &abandon, Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(
        &app,
        post_form("/api/act_on_task", &id_form, Some(&lee_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);

    let admin_cookie = sign_in_as(&app, "ada").await;
    let empty_reason = format!("id={task_id}&act=abandon&reason=+");
    let (response, body) = send(
        &app,
        post_form("/api/act_on_task", &empty_reason, Some(&admin_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    // A queued task cannot be retried (nothing to retry) but can be abandoned, once.
    let (_, body) = send(
        &app,
        post_form("/api/act_on_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    let (_, body) = send(
        &app,
        post_form("/api/act_on_task", &abandon, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "true");
    let (_, body) = send(
        &app,
        post_form("/api/act_on_task", &abandon, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    // Retry puts it back in the queue, once.
    let (_, body) = send(
        &app,
        post_form("/api/act_on_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "true");
    let (_, body) = send(
        &app,
        post_form("/api/act_on_task", &id_form, Some(&admin_cookie)),
    )
    .await;
    assert_eq!(body, "false");
    let queued = "SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'QUEUED'";
    assert_eq!(db.scalar(queued).await, 1);

    let unknown = format!("id={}&act=retry", Uuid::new_v4());
    let (response, body) = send(
        &app,
        post_form("/api/act_on_task", &unknown, Some(&admin_cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
}

/// The explorer's filters through the JSON API, each alone and together, and acts on every
/// matching task: staff may only cancel, and only their own.
async fn the_explorer_filters_and_acts_on_all_matching(db: TestDatabase) {
    let app = app(&db).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    let ada = add_user(&db, "ada", Role::Admin).await;
    let store = Store::new(db.conn.clone());
    let enqueue = async |component: &str, owner: Uuid| {
        let mut txn = store.begin_queue().await.unwrap();
        let task = txn
            .enqueue(NewTask::new(component, json!({}), owner))
            .await
            .unwrap();
        txn.commit().await.unwrap();
        task.id
    };
    let lee_watch = enqueue("caseload.watch", lee.id).await;
    let lee_export = enqueue("caseload.export", lee.id).await;
    let ada_export = enqueue("caseload.export", ada.id).await;
    assert!(store.task_abandon(lee_watch, "test", "ada").await.unwrap());

    let admin = sign_in_as(&app, "ada").await;
    let ids = async |query: &str, cookie: &str| -> Vec<String> {
        let (response, body) =
            send(&app, get(&format!("/api/1/tasks?{query}"), Some(cookie))).await;
        assert_status(&response, &body, StatusCode::OK);
        let page: Value = serde_json::from_str(&body).unwrap();
        let ids: Vec<String> = page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|task| task["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(page["total"], ids.len(), "{query}: {body}");
        ids
    };
    let s = |id: Uuid| id.to_string();
    assert_eq!(
        ids("", &admin).await,
        [s(ada_export), s(lee_export), s(lee_watch)]
    );
    assert_eq!(
        ids("action=caseload.export", &admin).await,
        [s(ada_export), s(lee_export)]
    );
    assert_eq!(ids("status=ABANDONED", &admin).await, [s(lee_watch)]);
    assert_eq!(
        ids("status=QUEUED,ABANDONED&owner=lee", &admin).await,
        [s(lee_export), s(lee_watch)]
    );
    assert_eq!(
        ids(&format!("id={lee_export}"), &admin).await,
        [s(lee_export)]
    );
    let today = store
        .task_get(ada_export)
        .await
        .unwrap()
        .unwrap()
        .created_date
        .date_naive();
    let tomorrow = today.succ_opt().unwrap();
    assert_eq!(
        ids(
            &format!("created_from={today}&created_to={today}&owner=ada"),
            &admin
        )
        .await,
        [s(ada_export)]
    );
    assert!(
        ids(&format!("created_from={tomorrow}"), &admin)
            .await
            .is_empty()
    );
    let (response, body) = send(&app, get("/api/1/tasks?owner=nobody", Some(&admin))).await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("no user is named 'nobody'"), "{body}");

    // Staff: their own only, and only Cancel.
    let staff = sign_in_as(&app, "lee").await;
    assert_eq!(ids("action=caseload.export", &staff).await, [s(lee_export)]);
    assert_eq!(
        ids("owner=lee", &staff).await,
        [s(lee_export), s(lee_watch)]
    );
    let act =
        |body: Value, cookie: &str| post_json("/api/1/tasks/act", &body.to_string(), Some(cookie));
    let everything = json!({"matching": {}});
    let (response, body) = send(
        &app,
        act(json!({"act": "retry", "selection": everything}), &staff),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(
        &app,
        act(
            json!({"act": "cancel", "selection": {"ids": [ada_export, lee_export]}}),
            &staff,
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 1, "skipped": 1})
    );
    assert_eq!(ids("status=QUEUED", &admin).await, [s(ada_export)]);

    // An admin retries every abandoned export and watch at once, then cancels all that is left.
    let abandoned = json!({"matching": {"status": "ABANDONED"}});
    let (_, body) = send(
        &app,
        act(json!({"act": "retry", "selection": abandoned}), &admin),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 2, "skipped": 0})
    );
    let (_, body) = send(
        &app,
        act(json!({"act": "cancel", "selection": everything}), &admin),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 3, "skipped": 0})
    );
    assert!(ids("status=QUEUED", &admin).await.is_empty());
    let (response, body) = send(
        &app,
        act(
            json!({"act": "abandon", "selection": everything, "reason": ""}),
            &admin,
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    let (response, body) = send(
        &app,
        act(json!({"act": "explode", "selection": everything}), &admin),
    )
    .await;
    assert!(response.status().is_client_error(), "{body}");
}
