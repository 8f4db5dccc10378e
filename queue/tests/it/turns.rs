//! Owners take turns for the slots (ADR 0075): a claim prefers, within a priority, the
//! owners with the fewest tasks on the node, and a node whose slots one owner's long tasks
//! hold lets one of them yield at a batch boundary, so another owner's task starts within
//! about a batch instead of after the first owner's tasks.

use std::time::Duration;

use queue::testing::{self, ItemsExecutor, TestDatabase};
use queue::{
    NewTask, Page, Registry, Runtime, RuntimeConfig, Store, TaskFilter, TaskGetAvailableParams,
    TaskStatus,
};
use serde_json::json;
use uuid::Uuid;

use super::{PATIENCE, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    claims_take_turns_among_owners_within_a_priority,
    a_claim_raises_the_owners_with_fewest_tasks_on_the_node_first,
    a_claim_starts_from_each_owners_first_due_task,
    a_waiting_owner_gets_a_turn_on_one_node,
    a_waiting_owner_gets_a_turn_on_three_nodes,
);

const A: Uuid = Uuid::from_u128(0xA);
const B: Uuid = Uuid::from_u128(0xB);
const C: Uuid = Uuid::from_u128(0xC);

fn task_of(owner: Uuid) -> NewTask {
    NewTask::new("test.turns", json!({}), owner).with_created_by("test")
}

async fn claims_take_turns_among_owners_within_a_priority(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let mut a_tasks = Vec::new();
    for _ in 0..5 {
        a_tasks.push(bundle.enqueue(task_of(A)).await.id);
    }
    let b_task = bundle.enqueue(task_of(B)).await.id;
    // A holds three slots of the node: B's task, the youngest, goes first.
    assert_eq!(claim_ids(store, 1, true, &[(A, 3)]).await, vec![b_task]);
    // Turns alternate: A's next (turn 1 + 3) after nobody's, then A's in age order.
    assert_eq!(
        claim_ids(store, 2, true, &[(A, 3), (B, 1)]).await,
        a_tasks[..2]
    );

    // Priority comes before turns.
    let urgent = bundle.enqueue(task_of(C).with_priority(5)).await.id;
    let waiting_b = bundle.enqueue(task_of(B)).await.id;
    assert_eq!(claim_ids(store, 1, true, &[(C, 9)]).await, vec![urgent]);
    // With two owners queued and none on the node, ties go to the oldest; B's task then
    // comes before A's second (B's turn 1, A's turn 2).
    assert_eq!(
        claim_ids(store, 3, true, &[]).await,
        vec![a_tasks[2], waiting_b, a_tasks[3]]
    );
    // Without turns: strictly priority, then age.
    let late_b = bundle.enqueue(task_of(B)).await.id;
    assert_eq!(
        claim_ids(store, 2, false, &[(A, 9)]).await,
        vec![a_tasks[4], late_b]
    );
}

/// A claim of four while A holds two slots of the node and B none, both with six queued:
/// B's first three (turns 1 to 3) and A's first one (turn 3), which ties with B's third and
/// starts before it, being older. Each owner's claimed tasks are its oldest.
async fn a_claim_raises_the_owners_with_fewest_tasks_on_the_node_first(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let mut a_tasks = Vec::new();
    let mut b_tasks = Vec::new();
    for _ in 0..6 {
        a_tasks.push(bundle.enqueue(task_of(A)).await.id);
    }
    for _ in 0..6 {
        b_tasks.push(bundle.enqueue(task_of(B)).await.id);
    }
    assert_eq!(
        claim_ids(store, 4, true, &[(A, 2)]).await,
        vec![b_tasks[0], b_tasks[1], a_tasks[0], b_tasks[2]]
    );
}

/// A claim reads each owner's tasks from its first due one: past tasks for later and tasks
/// of a paused component at its front, and on to its lower priorities when its first one
/// does not fill its quota. A claim of four, two each: A's urgent task and its oldest
/// routine one, and B's one due urgent task.
async fn a_claim_starts_from_each_owners_first_due_task(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let later = store.clock().now() + chrono::Duration::hours(1);
    bundle
        .enqueue(task_of(A).with_priority(9).with_run_at(later))
        .await;
    let a_urgent = bundle.enqueue(task_of(A).with_priority(5)).await.id;
    let mut a_routine = Vec::new();
    for _ in 0..2 {
        a_routine.push(bundle.enqueue(task_of(A)).await.id);
    }
    store.component_pause("test.paused", "test").await.unwrap();
    let paused = NewTask::new("test.paused", json!({}), B).with_created_by("test");
    bundle.enqueue(paused.with_priority(5)).await;
    let b_urgent = bundle.enqueue(task_of(B).with_priority(5)).await.id;
    let mut claimed = claim_ids(store, 4, true, &[]).await;
    claimed.sort();
    let mut expected = vec![a_urgent, b_urgent, a_routine[0]];
    expected.sort();
    assert_eq!(claimed, expected);
}

/// The ids of up to `max` tasks claimed for one node, in the order it starts them.
async fn claim_ids(
    store: &Store,
    max: u32,
    take_turns: bool,
    on_node: &[(Uuid, i64)],
) -> Vec<Uuid> {
    let claimed = store
        .task_get_available(TaskGetAvailableParams {
            max,
            now: store.clock().now(),
            node_id: "turns-node",
            take_turns,
            on_node,
        })
        .await
        .unwrap();
    claimed.into_iter().map(|task| task.id).collect()
}

async fn a_waiting_owner_gets_a_turn_on_one_node(db: TestDatabase) {
    a_waiting_owner_gets_a_turn(db, 1).await;
}

async fn a_waiting_owner_gets_a_turn_on_three_nodes(db: TestDatabase) {
    a_waiting_owner_gets_a_turn(db, 3).await;
}

/// Owner A's long tasks (more than the slots) fill every slot of `nodes` nodes of two
/// slots; then owner B submits one short task. It runs to completion while every one of
/// A's is still unfinished: B waited for a batch of A's, not for A's tasks. An A task that
/// gave its slot says so in its history and kept its attempt.
async fn a_waiting_owner_gets_a_turn(db: TestDatabase, nodes: usize) {
    let mut bundle = setup(db).await;
    testing::create_effect_table(bundle.store.db()).await;
    let mut runtimes = Vec::with_capacity(nodes);
    for node in 0..nodes {
        // Each node its own pool, as separate processes would have.
        let conn = queue::database::connect(&bundle.db.url, 4).await.unwrap();
        let mut registry = Registry::new();
        registry.register(
            "test.items",
            ItemsExecutor {
                pause: Duration::from_millis(50),
            },
        );
        let config = RuntimeConfig {
            workers: 2,
            prefetch: Some(0),
            ..testing::fast_config(&format!("turns-{node}"))
        };
        let runtime = Runtime::start(config, Store::new(conn), registry).await;
        runtimes.push(runtime.unwrap());
    }
    let slots = 2 * nodes as u64;
    // 60 batches 50 ms apart: 3 s each, far longer than a turn takes.
    let long = json!({"items": 60, "batch": 1});
    let a_tasks: Vec<NewTask> = (0..slots * 2)
        .map(|_| NewTask::new("test.items", long.clone(), A))
        .collect();
    let store = bundle.store.clone();
    store.enqueue_many(store.db(), a_tasks).await.unwrap();
    bundle.wait_count(TaskStatus::Executing, slots).await;

    let short = NewTask::new("test.items", json!({"items": 1, "batch": 1}), B);
    let b_task = bundle.enqueue(short).await;
    bundle.wait_status(b_task.id, TaskStatus::Completed).await;
    let a_done = TaskFilter {
        statuses: vec![TaskStatus::Completed],
        owner_id: Some(A),
        ..TaskFilter::default()
    };
    assert_eq!(
        store.task_count(&a_done).await.unwrap(),
        0,
        "B's task waited for one of A's to finish"
    );

    let a_tasks = store
        .task_list(
            &TaskFilter {
                owner_id: Some(A),
                ..TaskFilter::default()
            },
            Page::first(100),
        )
        .await
        .unwrap();
    let mut yielded = false;
    for task in &a_tasks {
        let history = store.task_history(task.id).await.unwrap();
        yielded |= history.iter().any(|entry| {
            entry.status == TaskStatus::Queued
                && entry.message.as_deref() == Some("went back to the queue for another owner's turn or its action's running limit")
                && entry.attempt == 0
        });
    }
    assert!(
        yielded,
        "one of A's tasks yielded its slot, keeping its attempt"
    );
    let stops: Vec<_> = runtimes
        .into_iter()
        .map(|runtime| tokio::spawn(runtime.shutdown(PATIENCE)))
        .collect();
    for stop in stops {
        stop.await.unwrap();
    }
}
