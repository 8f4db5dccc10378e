//! `/metrics` reports what the queue did and what the task table holds, in the Prometheus
//! text format, to anyone (a scraper does not sign in).

use axum::http::StatusCode;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{TestDatabase, fast_config};
use queue::{NewTask, Registry, Runtime, Store, TaskContext, TaskError, TaskExecutor};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::*;

queue::backend_tests!(Migrator => metrics_count_what_the_queue_did);

/// Succeeds, or fails for good when the spec says so.
struct Outcome;

#[async_trait::async_trait]
impl TaskExecutor for Outcome {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        match ctx.spec().get("fail") {
            Some(_) => Err(TaskError::Permanent("asked to fail".into())),
            None => Ok(()),
        }
    }
}

async fn metrics_count_what_the_queue_did(db: TestDatabase) {
    // The recorder is shared by every test of this process: a component of its own keeps
    // this test's figures apart.
    let component = format!("test.metrics_{}", Uuid::new_v4().simple());
    let store = Store::new(db.conn.clone());
    let app = app_with_store(&db, store.clone()).await;
    let owner = add_user(&db, "owner", Role::Staff).await;
    let mut registry = Registry::new();
    registry.register(component.clone(), Outcome);
    let runtime = Runtime::start(fast_config("metrics"), store.clone(), registry)
        .await
        .unwrap();
    let mut txn = store.begin_queue().await.unwrap();
    let mut tasks: Vec<NewTask> = (0..3)
        .map(|_| NewTask::new(component.clone(), json!({}), owner.id))
        .collect();
    tasks.push(NewTask::new(
        component.clone(),
        json!({"fail": true}),
        owner.id,
    ));
    txn.enqueue_many(tasks).await.unwrap();
    txn.commit().await.unwrap();
    let finished = || async {
        let (_, body) = send(&app, get("/metrics", None)).await;
        body.contains(&format!(
            "bulkq_tasks{{status=\"COMPLETED\",component=\"{component}\"}} 3"
        ))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !finished().await {
        assert!(std::time::Instant::now() < deadline, "the tasks finished");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    runtime.shutdown(std::time::Duration::from_secs(5)).await;

    let (response, body) = send(&app, get("/metrics", None)).await;
    assert_status(&response, &body, StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(content_type.starts_with("text/plain; version=0.0.4"));
    let expected = [
        format!("bulkq_tasks{{status=\"FAILURE\",component=\"{component}\"}} 1"),
        format!("bulkq_tasks_claimed_total{{component=\"{component}\"}} 4"),
        format!(
            "bulkq_task_attempts_finished_total{{component=\"{component}\",outcome=\"completed\"}} 3"
        ),
        format!(
            "bulkq_task_attempts_finished_total{{component=\"{component}\",outcome=\"failure\"}} 1"
        ),
        format!("bulkq_task_execution_seconds_count{{component=\"{component}\"}} 4"),
        format!("bulkq_task_queue_wait_seconds_count{{component=\"{component}\"}} 4"),
        format!("bulkq_task_execution_seconds_bucket{{component=\"{component}\",le=\"+Inf\"}} 4"),
        "# TYPE bulkq_executor_slots_in_use gauge".to_owned(),
        "# HELP bulkq_tasks_rescued_total".to_owned(),
        format!(
            "bulkq_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        ),
        // The scrapes above, by route template.
        "bulkq_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"200\"}".to_owned(),
        "bulkq_http_request_duration_seconds_bucket{route=\"/metrics\",method=\"GET\",le=\"+Inf\"}"
            .to_owned(),
        // Nothing waits.
        "bulkq_queue_oldest_due_wait_seconds 0".to_owned(),
    ];
    for line in expected {
        assert!(body.contains(&line), "/metrics has {line:?}:\n{body}");
    }

    // A task no node claims: the backlog's age shows.
    let mut txn = store.begin_queue().await.unwrap();
    txn.enqueue(NewTask::new(component.clone(), json!({}), owner.id))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let (_, body) = send(&app, get("/metrics", None)).await;
    let waited: f64 = body
        .lines()
        .find_map(|line| line.strip_prefix("bulkq_queue_oldest_due_wait_seconds "))
        .expect("the gauge")
        .parse()
        .unwrap();
    assert!(waited > 0.0, "a due task waits: {waited}");
}
