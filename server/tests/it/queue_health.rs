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
    let mut events = store.subscribe();
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

    // Retry one by id, then abandon all matching (the two still in ERROR).
    let retry_one = format!("ids[0]={}&all_matching=false", tasks[0].id);
    let (response, body) = send(
        &app,
        post_form("/api/retry_tasks", &retry_one, Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"changed": 1, "skipped": 0})
    );
    let (response, body) = send(
        &app,
        post_form(
            "/api/abandon_tasks",
            "all_matching=true&reason=+",
            Some(&admin),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    let (response, body) = send(
        &app,
        post_form("/api/retry_tasks", "all_matching=false", Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, body) = send(
        &app,
        post_form(
            "/api/abandon_tasks",
            "all_matching=true&reason=obsolete",
            Some(&admin),
        ),
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
