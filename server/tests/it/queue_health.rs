use axum::http::StatusCode;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{TestDatabase, fast_config};
use queue::{NewTask, NodeIdentity, Registry, Runtime, Store, TaskFilter, TaskStatus};
use serde_json::{Value, json};

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    only_admins_see_queue_health,
    admins_repair_failed_tasks_in_bulk,
    nodes_are_live_stopped_or_dead,
    admins_run_pause_and_resume_periodic_jobs,
);

async fn only_admins_see_queue_health(db: TestDatabase) {
    let app = app(&db).await;
    let sam_cookie = sign_in(&app).await;
    let (response, body) = send(&app, post_form("/api/queue_health", "", Some(&sam_cookie))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(
        &app,
        post_form(
            "/api/set_action_paused",
            "action=x&paused=true",
            Some(&sam_cookie),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(&app, post_form("/api/queue_health", "", None)).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
}

/// Column of a status in the health tables.
fn col(status: &str) -> usize {
    bulkq_types::TaskStatus::ALL
        .iter()
        .position(|s| s.as_str() == status)
        .unwrap()
}

async fn admins_repair_failed_tasks_in_bulk(db: TestDatabase) {
    // Tasks of a component no node can run end in ERROR: three of them to repair.
    let store = Store::new(db.conn.clone());
    let app = app_with_store(&db, store.clone()).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let runtime = Runtime::start(fast_config("health"), store.clone(), Registry::new())
        .await
        .unwrap();
    let mut txn = store.begin_queue().await.unwrap();
    let tasks = txn
        .enqueue_many(
            (0..3)
                .map(|_| NewTask::new("test.unknown", json!({}), lee.id))
                .collect(),
        )
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let errors = TaskFilter {
        statuses: vec![TaskStatus::Error],
        ..TaskFilter::default()
    };
    let mut events = store.subscribe().await.unwrap();
    queue::testing::wait_until(
        &mut events,
        std::time::Duration::from_secs(60),
        "3 tasks in ERROR",
        async || store.task_count(&errors).await.unwrap() == 3,
    )
    .await;
    runtime.shutdown(std::time::Duration::from_secs(5)).await;

    let admin = sign_in_as(&app, "ada").await;
    let health = |form: &'static str| post_form("/api/queue_health", form, Some(&admin));
    let (response, body) = send(&app, health("")).await;
    assert_status(&response, &body, StatusCode::OK);
    let report: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(report["problem_total"], 3);
    assert_eq!(report["totals"][col("ERROR")], 3);
    assert_eq!(report["by_action"][0]["action"], "test.unknown");
    assert_eq!(report["by_action"][0]["counts"][col("ERROR")], 3);
    // Nothing is running, so nothing is stalled.
    assert_eq!(report["stalled"], json!([]));
    // Nothing completed: a full hour of zeros.
    assert_eq!(report["throughput"].as_array().unwrap().len(), 60);
    assert!(
        report["throughput"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n == 0)
    );
    let (_, body) = send(&app, health("action=other")).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["problem_total"],
        0
    );

    // Retry one by id, then abandon all matching (the two still in ERROR): the page's
    // "all matching" is the failed list's own query.
    let act = |request: Value| {
        post_json(
            "/api/act_on_tasks",
            &json!({ "request": request }).to_string(),
            Some(&admin),
        )
    };
    let all_failed = serde_json::to_value(app::api::admin::problems_query("")).unwrap();
    let (response, body) = send(
        &app,
        act(json!({"act": "retry", "selection": {"ids": [tasks[0].id]}})),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 1, "skipped": 0})
    );
    let (response, body) = send(
        &app,
        act(json!({"act": "abandon", "selection": {"matching": all_failed}, "reason": " "})),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    let (response, body) = send(&app, act(json!({"act": "retry", "selection": {"ids": []}}))).await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, body) = send(
        &app,
        act(json!({"act": "abandon", "selection": {"matching": all_failed}, "reason": "obsolete"})),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 2, "skipped": 0})
    );
    let (_, body) = send(&app, health("")).await;
    let report: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(report["problem_total"], 0);
    assert_eq!(report["totals"][col("QUEUED")], 1);
    assert_eq!(report["totals"][col("ABANDONED")], 2);

    // Pausing holds in the database, for every node.
    let (response, body) = send(
        &app,
        post_form(
            "/api/set_action_paused",
            "action=test.unknown&paused=true",
            Some(&admin),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let (_, body) = send(&app, health("")).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["by_action"][0]["paused"],
        true
    );
    send(
        &app,
        post_form(
            "/api/set_action_paused",
            "action=test.unknown&paused=false",
            Some(&admin),
        ),
    )
    .await;
    let (_, body) = send(&app, health("")).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["by_action"][0]["paused"],
        false
    );
}

queue::backend_tests!(Migrator => staff_get_a_403_page);

async fn staff_get_a_403_page(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let sam_cookie = sign_in(&app).await;
    let (response, body) = send(&app, get("/admin/queue", Some(&sam_cookie))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    assert!(
        body.contains("Queue health is for administrators only."),
        "{body}"
    );
    let admin = sign_in_as(&app, "ada").await;
    let (response, body) = send(&app, get("/admin/queue", Some(&admin))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(body.contains("No failed tasks."), "{body}");
}

/// A node is LIVE while it heartbeats, STOPPED after a clean shutdown, and DEAD when silent
/// for the node timeout or replaced by a newer start of its system id (the rescuer's rule).
async fn nodes_are_live_stopped_or_dead(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let cookie = sign_in_as(&app, "ada").await;
    let store = Store::new(db.conn.clone());
    let now = chrono::Utc::now();
    let ago = |seconds| now - chrono::Duration::seconds(seconds);
    let live = NodeIdentity::new("live", ago(60));
    let stopped = NodeIdentity::new("stopped", ago(60));
    let silent = NodeIdentity::new("silent", ago(600));
    let replaced = NodeIdentity::new("restarted", ago(600));
    let restarted = NodeIdentity::new("restarted", ago(5));
    for (node, heartbeat) in [
        (&live, now),
        (&stopped, now),
        (&silent, ago(120)),
        (&replaced, now),
        (&restarted, now),
    ] {
        store.node_heartbeat(node, 0, heartbeat).await.unwrap();
    }
    store
        .node_mark_stopped(&stopped.node_id, now)
        .await
        .unwrap();

    let (response, body) = send(
        &app,
        post_form("/api/queue_health", "action=", Some(&cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let health: Value = serde_json::from_str(&body).unwrap();
    let state_of = |node: &NodeIdentity| {
        health["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["node_id"] == node.node_id.as_str())
            .map(|row| row["state"].clone())
            .unwrap()
    };
    assert_eq!(state_of(&live), "LIVE");
    assert_eq!(state_of(&stopped), "STOPPED");
    assert_eq!(state_of(&silent), "DEAD");
    assert_eq!(state_of(&replaced), "DEAD");
    assert_eq!(state_of(&restarted), "LIVE");
}

/// The periodic jobs through the JSON API and the dashboard's server function: listed with
/// their lock times, paused (then "run now" is refused), resumed, and run now.
async fn admins_run_pause_and_resume_periodic_jobs(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let app = app_with_store(&db, store.clone()).await;
    add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let runtime = Runtime::start(fast_config("periodic-api"), store.clone(), Registry::new())
        .await
        .unwrap();
    let staff = sign_in_as(&app, "lee").await;
    let admin = sign_in_as(&app, "ada").await;
    let (response, body) = send(&app, get("/api/1/periodic-jobs", Some(&staff))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);

    let prune = async || -> Value {
        let (response, body) = send(&app, get("/api/1/periodic-jobs", Some(&admin))).await;
        assert_status(&response, &body, StatusCode::OK);
        let jobs: Vec<Value> = serde_json::from_str(&body).unwrap();
        jobs.into_iter()
            .find(|job| job["name"] == "queue.prune")
            .expect("listed")
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while prune().await["last_run"] == "" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first prune within 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let first = prune().await;
    assert_eq!(first["paused"], false);
    assert!(
        first["lock_at_most_seconds"].as_i64().unwrap() > 0,
        "{first}"
    );

    let post = |path: &str| post_json(path, "", Some(&admin));
    let (response, body) = send(&app, post("/api/1/periodic-jobs/queue.prune/pause")).await;
    assert_status(&response, &body, StatusCode::NO_CONTENT);
    assert_eq!(prune().await["paused"], true);
    let (response, body) = send(&app, post("/api/1/periodic-jobs/queue.prune/run")).await;
    assert_status(&response, &body, StatusCode::CONFLICT);
    let (response, body) = send(&app, post("/api/1/periodic-jobs/nonesuch/pause")).await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
    let (response, body) = send(&app, post("/api/1/periodic-jobs/queue.prune/resume")).await;
    assert_status(&response, &body, StatusCode::NO_CONTENT);

    // Run now, from the dashboard's door: the prune runs again within moments.
    let (response, body) = send(
        &app,
        post_form("/api/run_periodic_job", "name=queue.prune", Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    while prune().await["last_run"] == first["last_run"] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "run now within 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    runtime.shutdown(std::time::Duration::from_secs(5)).await;
}
