//! What each kind of attempt outcome does to a task.

use std::time::Duration;

use queue::testing::TestDatabase;
use queue::{
    ComponentConfig, Registry, RetryPolicy, TaskContext, TaskError, TaskExecutor, TaskStatus,
};

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    transient_errors_are_retried_until_success,
    permanent_errors_and_exhausted_budgets_fail,
    panics_are_retried_and_the_process_survives,
    timeouts_cancel_and_retry,
    unknown_components_are_errors,
);

/// Fails (or panics) in attempts before `succeed_from`, in the way the spec's `mode` says.
struct Flaky;

#[async_trait::async_trait]
impl TaskExecutor for Flaky {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let succeed_from = ctx.spec()["succeed_from"].as_i64().unwrap_or(i64::MAX);
        if i64::from(ctx.attempt()) >= succeed_from {
            return Ok(());
        }
        match ctx.spec()["mode"].as_str() {
            Some("permanent") => Err(TaskError::permanent("bad input")),
            Some("panic") => panic!("executor bug"),
            Some("hang") => {
                ctx.cancellation().cancelled().await;
                Err(TaskError::Cancelled)
            }
            _ => Err(TaskError::transient(format!(
                "blip in attempt {}",
                ctx.attempt()
            ))),
        }
    }
}

/// The execution timeout of every test but the hanging executor's: far longer than any of
/// them runs, so that no outcome is overtaken by a timeout. A panic is the slow one: the
/// executor's task ends only after the panic hook has printed the backtrace, and with
/// `RUST_BACKTRACE` set, symbolicating this 140 MB debug binary took 0.3 s on an idle
/// machine, and takes longer under the whole suite's load. A clean-clone CI run, with this
/// at 2 s, recorded the panic test's first attempt as something other than a panic.
const TIMEOUT: Duration = Duration::from_secs(60);
/// The hanging executor's timeout: what its test waits for.
const HANG_TIMEOUT: Duration = Duration::from_secs(2);

/// Quick retries, so the test does not wait for real backoff.
fn registry() -> Registry {
    registry_timing_out_after(TIMEOUT)
}

fn registry_timing_out_after(timeout: Duration) -> Registry {
    let config = ComponentConfig {
        retry: RetryPolicy {
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            jitter: 0.0,
        },
        timeout,
        ..ComponentConfig::default()
    };
    let mut registry = Registry::new();
    registry.register_with("test.flaky", Flaky, config);
    registry
}

fn flaky(spec: serde_json::Value) -> queue::NewTask {
    queue::NewTask {
        spec,
        ..new_task("test.flaky")
    }
}

async fn transient_errors_are_retried_until_success(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = bundle.start("transient", registry()).await;
    let task = bundle
        .enqueue(flaky(
            serde_json::json!({ "mode": "transient", "succeed_from": 3 }),
        ))
        .await;
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempt, 3);
    let history = bundle.store.task_history(task.id).await.unwrap();
    let errors: Vec<_> = history
        .iter()
        .filter(|event| event.status == TaskStatus::Queued && event.message.is_some())
        .filter_map(|event| event.message.as_deref())
        .collect();
    assert_eq!(errors, vec!["blip in attempt 1", "blip in attempt 2"]);
    let statuses: Vec<_> = history.iter().map(|event| event.status).collect();
    assert_eq!(statuses.first(), Some(&TaskStatus::Queued));
    assert_eq!(statuses.last(), Some(&TaskStatus::Completed));
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == TaskStatus::Executing)
            .count(),
        3
    );
}

async fn permanent_errors_and_exhausted_budgets_fail(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = bundle.start("failing", registry()).await;
    let permanent = bundle
        .enqueue(flaky(serde_json::json!({ "mode": "permanent" })))
        .await;
    let exhausted = bundle
        .enqueue(flaky(serde_json::json!({ "mode": "transient" })).with_max_attempts(2))
        .await;
    let permanent = bundle.wait_status(permanent.id, TaskStatus::Failure).await;
    let exhausted = bundle.wait_status(exhausted.id, TaskStatus::Failure).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(permanent.attempt, 1);
    assert_eq!(permanent.workflow_status_desc.as_deref(), Some("bad input"));
    assert!(permanent.workflow_stopped_date.is_some());
    assert_eq!(exhausted.attempt, 2);
    let desc = exhausted.workflow_status_desc.unwrap();
    assert!(desc.starts_with("attempts exhausted (2 of 2)"), "{desc}");

    // An admin retries the failed task: QUEUED again, with a fresh attempt budget.
    assert!(
        bundle
            .store
            .task_retry(exhausted.id, "admin")
            .await
            .unwrap()
    );
    let retried = bundle.task(exhausted.id).await;
    assert_eq!(retried.workflow_status, TaskStatus::Queued);
    assert_eq!(retried.attempt, 0);
    assert_eq!(retried.workflow_stopped_date, None);
    let last = bundle
        .store
        .task_history(exhausted.id)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        (last.status, last.actor.as_str()),
        (TaskStatus::Queued, "admin")
    );
}

async fn panics_are_retried_and_the_process_survives(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = bundle.start("panicky", registry()).await;
    let task = bundle
        .enqueue(flaky(
            serde_json::json!({ "mode": "panic", "succeed_from": 2 }),
        ))
        .await;
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempt, 2);
    let history = bundle.store.task_history(task.id).await.unwrap();
    assert!(
        history
            .iter()
            .any(|event| event.message.as_deref() == Some("panicked: executor bug")),
        "the first attempt's panic is in the history: {history:#?}"
    );
}

async fn timeouts_cancel_and_retry(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = bundle
        .start("timeouts", registry_timing_out_after(HANG_TIMEOUT))
        .await;
    let task = bundle
        .enqueue(flaky(
            serde_json::json!({ "mode": "hang", "succeed_from": 2 }),
        ))
        .await;
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempt, 2);
    let history = bundle.store.task_history(task.id).await.unwrap();
    assert!(history.iter().any(|event| {
        event
            .message
            .as_deref()
            .is_some_and(|message| message.starts_with("timed out after"))
    }));
}

async fn unknown_components_are_errors(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runtime = bundle.start("unknown", registry()).await;
    let task = bundle.enqueue(new_task("test.nobody_knows_me")).await;
    let failed = bundle.wait_status(task.id, TaskStatus::Error).await;
    // The node carries on with other work.
    let other = bundle
        .enqueue(flaky(serde_json::json!({ "succeed_from": 1 })))
        .await;
    bundle.wait_status(other.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    let desc = failed.workflow_status_desc.unwrap();
    assert!(
        desc.contains("no executor is registered for component 'test.nobody_knows_me'"),
        "{desc}"
    );
}
