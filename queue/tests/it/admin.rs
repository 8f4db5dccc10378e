//! Admin operations: abandon, retry, lists and counts.

use std::time::Duration;

use queue::testing::TestDatabase;
use queue::{
    Checkpoint, Page, Registry, TaskContext, TaskCursor, TaskError, TaskExecutor, TaskFilter,
    TaskSelector, TaskStatus,
};
use serde_json::json;
use uuid::Uuid;

use super::{CountingExecutor, new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    abandoning_a_running_task_cancels_it,
    requeueing_a_stalled_task_takes_it_back_from_its_node_at_once,
    the_history_shows_every_step_of_an_abandoned_and_retried_task,
    a_failed_task_can_be_retried,
    lists_counts_and_filters,
    the_backlog_age_counts_only_due_tasks,
    throughput_counts_completions_per_minute,
    stalled_tasks_are_those_of_dead_nodes_or_without_progress,
);

/// Commits an empty batch every 20 ms until told to stop, then reports whether it was told.
struct Endless {
    cancelled: tokio::sync::mpsc::UnboundedSender<TaskError>,
}

#[async_trait::async_trait]
impl TaskExecutor for Endless {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let mut round = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            round += 1;
            let result = ctx
                .batch(move |_| {
                    Box::pin(async move { Ok(Checkpoint::new(json!({ "round": round }))) })
                })
                .await;
            if let Err(error) = result {
                let _ = self.cancelled.send(error.clone());
                return Err(error);
            }
        }
    }
}

async fn abandoning_a_running_task_cancels_it(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let (tx, mut cancelled) = tokio::sync::mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry.register("test.endless", Endless { cancelled: tx });
    let runtime = bundle.start("abandon", registry).await;
    let task = bundle.enqueue(new_task("test.endless")).await;
    bundle.wait_status(task.id, TaskStatus::Executing).await;

    let outcome = bundle
        .store
        .task_abandon_many(
            &TaskSelector::Ids(vec![task.id, Uuid::nil()]),
            "no longer needed",
            "admin",
        )
        .await
        .unwrap();
    assert_eq!(outcome.changed, vec![task.id]);
    assert_eq!(outcome.skipped, vec![Uuid::nil()]);
    let error = tokio::time::timeout(Duration::from_secs(10), cancelled.recv())
        .await
        .expect("the executor noticed")
        .unwrap();
    assert_eq!(error, TaskError::Cancelled);
    // Idempotent: a second abandon skips it.
    let again = bundle
        .store
        .task_abandon_many(&TaskSelector::Ids(vec![task.id]), "again", "admin")
        .await
        .unwrap();
    assert!(again.changed.is_empty());
    runtime.shutdown(Duration::from_secs(5)).await;
    let row = bundle.task(task.id).await;
    assert_eq!(
        row.workflow_status,
        TaskStatus::Abandoned,
        "the worker did not overwrite it"
    );
    assert!(
        row.workflow_status_desc
            .unwrap()
            .contains("no longer needed")
    );
}

/// An admin's "Requeue now": the running task goes back to the queue without waiting for
/// the rescuer, its worker is fenced off (its next checkpoint finds the lease gone), and it
/// runs again with a fresh budget. Retry, for tasks that ended badly, leaves it alone; and
/// the task's own unique key is no collision.
async fn requeueing_a_stalled_task_takes_it_back_from_its_node_at_once(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let (tx, mut cancelled) = tokio::sync::mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry.register("test.endless", Endless { cancelled: tx });
    let runtime = bundle.start("requeue", registry).await;
    let task = bundle
        .enqueue(new_task("test.endless").with_unique_key("stalled-1"))
        .await;
    bundle.wait_status(task.id, TaskStatus::Executing).await;
    let store = &bundle.store;
    let ids = TaskSelector::Ids(vec![task.id]);

    let retried = store.task_retry_many(&ids, "admin").await.unwrap();
    assert_eq!(
        retried.skipped,
        vec![task.id],
        "retry is for tasks that ended"
    );
    let requeued = store
        .task_requeue_running_many(&ids, "admin")
        .await
        .unwrap();
    assert_eq!(requeued.changed, vec![task.id]);
    let error = tokio::time::timeout(Duration::from_secs(10), cancelled.recv())
        .await
        .expect("the old worker noticed")
        .unwrap();
    assert_eq!(error, TaskError::Cancelled);
    // The node claims it again: a second Executing after the admin's Queued.
    let mut events = store.subscribe().await.unwrap();
    queue::testing::wait_until(
        &mut events,
        Duration::from_secs(30),
        "claimed again",
        async || {
            let history = store.task_history(task.id).await.unwrap();
            let claims = history.iter().filter(|e| e.status == TaskStatus::Executing);
            claims.count() == 2
        },
    )
    .await;
    assert!(store.task_cancel_many(&ids, "lee").await.unwrap().changed == vec![task.id]);
    runtime.shutdown(Duration::from_secs(5)).await;

    let steps: Vec<_> = store
        .task_history(task.id)
        .await
        .unwrap()
        .iter()
        .map(|event| (event.status, event.attempt, event.actor.clone()))
        .filter(|(_, _, actor)| !actor.starts_with("requeue"))
        .collect();
    use TaskStatus::{Abandoned, Queued};
    assert_eq!(
        steps,
        [
            (Queued, 0, "test".to_owned()),
            (Queued, 0, "admin".to_owned()),
            (Abandoned, 1, "lee".to_owned()),
        ]
    );
    let row = bundle.task(task.id).await;
    assert!(
        row.workflow_status_desc
            .unwrap()
            .contains("abandoned by lee: cancelled")
    );
    bundle.assert_kept_tables_match_rows().await;
}

/// The history stores the claim an abandon ends (the next claim overwrites the row's copy)
/// and reads the rest off the row.
async fn the_history_shows_every_step_of_an_abandoned_and_retried_task(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let (tx, _cancelled) = tokio::sync::mpsc::unbounded_channel();
    let mut registry = Registry::new();
    registry.register("test.endless", Endless { cancelled: tx });
    let runtime = bundle.start("history-before", registry).await;
    let task = bundle.enqueue(new_task("test.endless")).await;
    bundle.wait_status(task.id, TaskStatus::Executing).await;
    assert!(
        bundle
            .store
            .task_abandon(task.id, "stuck", "admin")
            .await
            .unwrap()
    );
    runtime.shutdown(Duration::from_secs(5)).await;

    let mut registry = Registry::new();
    registry.register("test.endless", CountingExecutor::default());
    let runtime = bundle.start("history-after", registry).await;
    assert!(bundle.store.task_retry(task.id, "admin").await.unwrap());
    bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;

    let history = bundle.store.task_history(task.id).await.unwrap();
    let steps: Vec<_> = history
        .iter()
        .map(|event| {
            (
                event.status,
                event.attempt,
                event.actor.split('-').next().unwrap(),
            )
        })
        .collect();
    use TaskStatus::{Abandoned, Completed, Executing, Queued, Scheduling};
    assert_eq!(
        steps,
        [
            (Queued, 0, "test"),
            (Scheduling, 1, "history"),
            (Executing, 1, "history"),
            (Abandoned, 1, "admin"),
            (Queued, 0, "admin"),
            (Scheduling, 1, "history"),
            (Executing, 1, "history"),
            (Completed, 1, "history"),
        ]
    );
    let nodes: Vec<_> = history
        .iter()
        .filter(|event| event.status == Executing)
        .map(|event| event.actor.rsplit_once('-').unwrap().0)
        .collect();
    assert_eq!(nodes, ["history-before", "history-after"]);
    bundle.assert_kept_tables_match_rows().await;
}

async fn a_failed_task_can_be_retried(db: TestDatabase) {
    let mut bundle = setup(db).await;
    // Nothing is registered under the component yet: the task ends in ERROR.
    let runtime = bundle.start("retry-before", Registry::new()).await;
    let task = bundle.enqueue(new_task("test.later_fixed")).await;
    bundle.wait_status(task.id, TaskStatus::Error).await;
    runtime.shutdown(Duration::from_secs(5)).await;

    // The fix is deployed; an admin retries everything in ERROR for the component.
    let counting = CountingExecutor::default();
    let mut registry = Registry::new();
    registry.register("test.later_fixed", counting.clone());
    let runtime = bundle.start("retry-after", registry).await;
    let filter = TaskFilter {
        statuses: vec![TaskStatus::Error],
        component: Some("test.later_fixed".to_owned()),
        ..TaskFilter::default()
    };
    let outcome = bundle
        .store
        .task_retry_many(&TaskSelector::Filter(filter), "admin")
        .await
        .unwrap();
    assert_eq!(outcome.changed, vec![task.id]);
    let done = bundle.wait_status(task.id, TaskStatus::Completed).await;
    runtime.shutdown(Duration::from_secs(5)).await;
    assert_eq!(done.attempt, 1, "a retry starts a fresh attempt budget");
    assert_eq!(counting.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        !bundle.store.task_retry(task.id, "admin").await.unwrap(),
        "COMPLETED is final"
    );
    bundle.assert_kept_tables_match_rows().await;
}

async fn lists_counts_and_filters(db: TestDatabase) {
    let bundle = setup(db).await;
    let owner = Uuid::now_v7();
    let mine: Vec<_> = (0..3)
        .map(|_| queue::NewTask::new("test.list", json!({}), owner))
        .collect();
    bundle
        .store
        .enqueue_many(bundle.store.db(), mine)
        .await
        .unwrap();
    bundle.enqueue(new_task("test.other")).await;
    let by_owner = TaskFilter {
        owner_id: Some(owner),
        ..TaskFilter::default()
    };
    assert_eq!(bundle.store.task_count(&by_owner).await.unwrap(), 3);
    // Pages follow a mark: tasks enqueued in one call may share their creation time, and
    // then their ids order them, so no task is repeated or skipped between pages.
    let store = &bundle.store;
    let first = store.task_list(&by_owner, Page::first(2)).await.unwrap();
    let mark = first.last().map(|task| TaskCursor {
        created: task.created_date,
        id: task.id,
    });
    let rest = store
        .task_list(
            &by_owner,
            Page {
                before: mark,
                limit: 10,
            },
        )
        .await
        .unwrap();
    let paged: Vec<Uuid> = first.iter().chain(&rest).map(|task| task.id).collect();
    let whole: Vec<Uuid> = store
        .task_list(&by_owner, Page::first(10))
        .await
        .unwrap()
        .iter()
        .map(|task| task.id)
        .collect();
    assert_eq!((first.len(), rest.len()), (2, 1));
    assert_eq!(paged, whole);
    assert_eq!(
        store.task_count_up_to(&by_owner, 2).await.unwrap(),
        (2, true)
    );
    assert_eq!(
        store.task_count_up_to(&by_owner, 3).await.unwrap(),
        (3, false)
    );
    let oldest = &rest[0];
    let just_it = TaskFilter {
        id: Some(oldest.id),
        ..TaskFilter::default()
    };
    assert_eq!(store.task_count(&just_it).await.unwrap(), 1);
    let from_it = TaskFilter {
        created_from: Some(oldest.created_date),
        ..by_owner.clone()
    };
    let until_it = TaskFilter {
        created_until: Some(oldest.created_date),
        ..by_owner.clone()
    };
    assert_eq!(store.task_count(&from_it).await.unwrap(), 3);
    assert_eq!(store.task_count(&until_it).await.unwrap(), 0);

    // A filter the kept counts answer pages by its exact total: 2, 2, then the last one.
    let queued_lists = TaskFilter {
        statuses: vec![TaskStatus::Queued],
        component: Some("test.list".to_owned()),
        ..TaskFilter::default()
    };
    let mut before = None;
    let mut seen = Vec::new();
    loop {
        let page = store
            .task_page(&queued_lists, Page { before, limit: 2 }, 10_000)
            .await
            .unwrap();
        assert_eq!((page.total, page.more), (3, false));
        seen.extend(page.tasks.iter().map(|task| task.id));
        match page.next {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, whole);
    let by_component = TaskFilter {
        component: Some("test.other".to_owned()),
        statuses: vec![TaskStatus::Queued],
        ..TaskFilter::default()
    };
    assert_eq!(bundle.store.task_count(&by_component).await.unwrap(), 1);
    let counts = bundle.store.task_count_by_status().await.unwrap();
    assert!(
        counts
            .iter()
            .any(|c| c.component == "test.list" && c.status == TaskStatus::Queued && c.count == 3)
    );
}

async fn the_backlog_age_counts_only_due_tasks(db: TestDatabase) {
    let bundle = setup(db).await;
    let now = chrono::Utc::now();
    assert_eq!(bundle.store.task_oldest_due(now).await.unwrap(), None);
    let later = now + chrono::Duration::hours(1);
    let earlier = now - chrono::Duration::minutes(5);
    bundle
        .enqueue(new_task("test.later").with_run_at(later))
        .await;
    assert_eq!(bundle.store.task_oldest_due(now).await.unwrap(), None);
    let due = bundle
        .enqueue(new_task("test.due").with_run_at(earlier))
        .await;
    assert_eq!(
        bundle.store.task_oldest_due(now).await.unwrap(),
        Some(due.run_at)
    );
}

async fn throughput_counts_completions_per_minute(db: TestDatabase) {
    let mut bundle = setup(db).await;
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut registry = Registry::new();
    registry.register("test.count", CountingExecutor { runs });
    let runtime = bundle.start("throughput", registry).await;
    for _ in 0..5 {
        bundle.enqueue(new_task("test.count")).await;
    }
    bundle.wait_count(TaskStatus::Completed, 5).await;
    runtime.shutdown(Duration::from_secs(5)).await;

    let now = chrono::Utc::now() + chrono::Duration::seconds(1);
    let per_minute = bundle.store.task_throughput(now, 60).await.unwrap();
    assert_eq!(per_minute.len(), 60);
    assert_eq!(per_minute.iter().sum::<i64>(), 5);
    // They all finished just now: in the last minute (or the one before, at a boundary).
    assert_eq!(per_minute[58] + per_minute[59], 5, "{per_minute:?}");
    // An hour later they are out of the window.
    let later = now + chrono::Duration::hours(2);
    assert_eq!(
        bundle
            .store
            .task_throughput(later, 60)
            .await
            .unwrap()
            .iter()
            .sum::<i64>(),
        0
    );
}

async fn stalled_tasks_are_those_of_dead_nodes_or_without_progress(db: TestDatabase) {
    let bundle = setup(db).await;
    let now = chrono::Utc::now();
    let live = queue::NodeIdentity::new("live", now);
    bundle.store.node_heartbeat(&live, 0, now).await.unwrap();
    let ghost = "ghost-20260101T000000Z";
    for node_id in [live.node_id.as_str(), ghost] {
        bundle.enqueue(new_task("test.stall")).await;
        let claimed = bundle
            .store
            .task_get_available(queue::TaskGetAvailableParams {
                max: 1,
                now: chrono::Utc::now(),
                node_id,
                take_turns: true,
                on_node: &[],
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
    }
    let minute = chrono::Duration::minutes(1);
    let stalled = |quiet_before| {
        bundle
            .store
            .task_list_stalled(now - minute, quiet_before, 10)
    };
    // Only the task of the node without a heartbeat row is stalled...
    let found = stalled(now - minute).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].scheduled_by_process.as_deref(), Some(ghost));
    // ...until the live node's task, too, has gone quiet for long enough.
    assert_eq!(stalled(now + minute).await.unwrap().len(), 2);
}
