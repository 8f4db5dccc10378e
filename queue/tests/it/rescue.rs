//! Rescue of tasks held by dead nodes, and stale workers that come back too late.

use chrono::{TimeDelta, Utc};
use queue::testing::TestDatabase;
use queue::{Finish, NodeIdentity, TaskGetAvailableParams, TaskStatus};

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_stale_worker_cannot_finish_a_rescued_task,
    an_older_incarnation_is_rescued_at_once,
    old_finished_tasks_are_pruned,
    only_other_live_nodes_count_as_alive,
);

/// Puts the database in the state a crash leaves: `node` claimed (and started) every queued
/// task, and its last heartbeat was at `heartbeat`.
async fn claim_all(
    bundle: &super::Bundle,
    node: &NodeIdentity,
    heartbeat: chrono::DateTime<Utc>,
) -> Vec<queue::Task> {
    bundle
        .store
        .node_heartbeat(node, 0, heartbeat)
        .await
        .unwrap();
    bundle
        .store
        .task_get_available(TaskGetAvailableParams {
            max: 100,
            now: Utc::now(),
            node_id: &node.node_id,
            take_turns: true,
            on_node: &[],
        })
        .await
        .unwrap()
}

async fn a_stale_worker_cannot_finish_a_rescued_task(db: TestDatabase) {
    let bundle = setup(db).await;
    let task = bundle.enqueue(new_task("test.stale")).await;
    let now = Utc::now();
    let dead = NodeIdentity::new("dead-host", now - TimeDelta::minutes(5));
    let claimed = claim_all(&bundle, &dead, now - TimeDelta::minutes(1)).await;
    assert_eq!(claimed[0].workflow_status, TaskStatus::Executing);

    let rescuer = NodeIdentity::new("live-host", now);
    bundle.store.node_heartbeat(&rescuer, 0, now).await.unwrap();
    let outcome = bundle
        .store
        .task_rescue_many(&rescuer, now - TimeDelta::seconds(30), 2, now)
        .await
        .unwrap();
    assert_eq!(outcome.retried, vec![task.id]);
    let rescued = bundle.task(task.id).await;
    assert_eq!(rescued.workflow_status, TaskStatus::Queued);
    assert_eq!(rescued.attempt, 1, "the rescued attempt is spent");

    // The dead node's worker wakes up and reports success under its old lease.
    let stale = Finish::complete(&claimed[0]);
    let changed = bundle
        .store
        .task_finish_many_if_running(std::slice::from_ref(&stale), Utc::now(), &dead.node_id)
        .await
        .unwrap();
    assert!(changed.is_empty(), "the stale result is discarded");
    assert_eq!(
        bundle.task(task.id).await.workflow_status,
        TaskStatus::Queued
    );

    // Even after a new claim: the new holder's lease differs from the stale one.
    let reclaimed = claim_all(&bundle, &rescuer, now).await;
    assert_eq!(reclaimed.len(), 1);
    assert!(
        bundle
            .store
            .task_finish_many_if_running(&[stale], Utc::now(), &dead.node_id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        bundle.task(task.id).await.workflow_status,
        TaskStatus::Executing
    );
    bundle.assert_kept_tables_match_rows().await;
}

async fn an_older_incarnation_is_rescued_at_once(db: TestDatabase) {
    let bundle = setup(db).await;
    let retryable = bundle.enqueue(new_task("test.restart")).await;
    let last_chance = bundle
        .enqueue(new_task("test.restart").with_max_attempts(1))
        .await;
    let now = Utc::now();
    let before = NodeIdentity::new("same-host", now - TimeDelta::seconds(10));
    // Its heartbeat is fresh: only the restart tells that it is gone.
    claim_all(&bundle, &before, now).await;

    let live_elsewhere = NodeIdentity::new("other-host", now);
    let outcome = bundle
        .store
        .task_rescue_many(&live_elsewhere, now - TimeDelta::seconds(30), 2, now)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        queue::RescueOutcome::default(),
        "a live node keeps its tasks"
    );

    let after = NodeIdentity::new("same-host", now);
    bundle.store.node_heartbeat(&after, 0, now).await.unwrap();
    let outcome = bundle
        .store
        .task_rescue_many(&after, now - TimeDelta::seconds(30), 2, now)
        .await
        .unwrap();
    assert_eq!(outcome.retried, vec![retryable.id]);
    assert_eq!(outcome.failed, vec![last_chance.id]);
    let failed = bundle.task(last_chance.id).await;
    assert_eq!(failed.workflow_status, TaskStatus::Failure);
    assert!(
        failed
            .workflow_status_desc
            .unwrap()
            .contains("no attempts are left")
    );
    bundle.assert_kept_tables_match_rows().await;
}

async fn old_finished_tasks_are_pruned(db: TestDatabase) {
    let bundle = setup(db).await;
    let old = bundle.enqueue(new_task("test.prune")).await;
    let active = bundle.enqueue(new_task("test.prune")).await;
    bundle
        .store
        .task_abandon(old.id, "old", "admin")
        .await
        .unwrap();
    assert_eq!(
        bundle
            .store
            .task_prune(Utc::now() - TimeDelta::days(7), 100)
            .await
            .unwrap(),
        0
    );
    let future_cutoff = Utc::now() + TimeDelta::seconds(1);
    assert_eq!(
        bundle.store.task_prune(future_cutoff, 100).await.unwrap(),
        1
    );
    assert!(bundle.store.task_get(old.id).await.unwrap().is_none());
    assert!(bundle.store.task_history(old.id).await.unwrap().is_empty());
    assert!(bundle.store.task_get(active.id).await.unwrap().is_some());
    bundle.assert_kept_tables_match_rows().await;
}

async fn only_other_live_nodes_count_as_alive(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let now = Utc::now();
    let cutoff = now - TimeDelta::seconds(30);
    let me = NodeIdentity::new("me", now);
    store.node_heartbeat(&me, 0, now).await.unwrap();
    let earlier_me = NodeIdentity::new("me", now - TimeDelta::seconds(5));
    store.node_heartbeat(&earlier_me, 0, now).await.unwrap();
    assert_eq!(store.node_count_others_alive(&me, cutoff).await.unwrap(), 0);

    let other = NodeIdentity::new("other", now);
    store.node_heartbeat(&other, 0, now).await.unwrap();
    let silent = NodeIdentity::new("silent", now - TimeDelta::seconds(60));
    store
        .node_heartbeat(&silent, 0, now - TimeDelta::seconds(31))
        .await
        .unwrap();
    let stopped = NodeIdentity::new("stopped", now);
    store.node_heartbeat(&stopped, 0, now).await.unwrap();
    store
        .node_mark_stopped(&stopped.node_id, now)
        .await
        .unwrap();
    assert_eq!(
        store.node_count_others_alive(&me, cutoff).await.unwrap(),
        1,
        "only `other`: not this node's own system, a silent node or a stopped one"
    );
}
