//! The columns derived from a task's status, `active_unique_key` and `problem_status`, hold
//! what their expressions give after every kind of writer: the store's enqueues, claims,
//! completions and other outcomes, an admin's repairs, and statements typed by hand. On
//! SQLite they are generated columns; on PostgreSQL triggers and the completion keep them.

use chrono::Utc;
use queue::testing::TestDatabase;
use queue::{Finish, Store, Task, TaskGetAvailableParams, TaskSelector, Transition};
use sea_orm::ConnectionTrait;

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    derived_columns_follow_every_writer,
    a_key_is_free_again_once_its_task_ends,
);

/// Tasks whose derived columns differ from what the status and the key give.
const WRONGLY_DERIVED: &str = "SELECT COUNT(*) FROM queue_task WHERE \
     active_unique_key IS DISTINCT FROM CASE WHEN workflow_status IN ('QUEUED', 'SCHEDULING', \
         'EXECUTING') THEN unique_key END \
     OR problem_status IS DISTINCT FROM CASE WHEN workflow_status IN ('FAILURE', 'ERROR', \
         'ABANDONED') THEN workflow_status END";

/// Up to `max` due tasks, claimed by one node.
async fn claim(store: &Store, max: u32) -> Vec<Task> {
    store
        .task_get_available(TaskGetAvailableParams {
            max,
            now: Utc::now(),
            node_id: "derived-node",
            take_turns: true,
            on_node: &[],
        })
        .await
        .unwrap()
}

async fn derived_columns_follow_every_writer(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let tasks = (0..12)
        .map(|i| match i % 2 {
            0 => new_task("test.derived").with_unique_key(format!("derived-{i}")),
            _ => new_task("test.derived"),
        })
        .collect();
    store.enqueue_many(store.db(), tasks).await.unwrap();
    let claimed = claim(store, 10).await;
    assert_eq!(claimed.len(), 10);
    assert_eq!(
        bundle.db.scalar(WRONGLY_DERIVED).await,
        0,
        "after enqueue and claim"
    );

    // Completions, failures, errors and a retry, as workers report them.
    let outcomes = [
        Transition::Complete,
        Transition::Fail {
            error: "bad input".into(),
        },
        Transition::Error {
            desc: "no executor".into(),
        },
        Transition::Retry {
            at: Utc::now(),
            error: "blip".into(),
        },
    ];
    let finishes: Vec<Finish> = claimed
        .iter()
        .zip(outcomes.iter().cycle())
        .map(|(task, outcome)| Finish {
            transition: outcome.clone(),
            ..Finish::complete(task)
        })
        .collect();
    store
        .task_finish_many_if_running(&finishes, Utc::now(), "derived-node")
        .await
        .unwrap();
    assert_eq!(
        bundle.db.scalar(WRONGLY_DERIVED).await,
        0,
        "after the outcomes"
    );
    let problems = bundle
        .db
        .scalar("SELECT COUNT(*) FROM queue_task WHERE problem_status IS NOT NULL")
        .await;
    assert_eq!(problems, 5, "three failures and two errors are problems");

    // An admin retries the problems and abandons one queued task.
    let problem_ids: Vec<uuid::Uuid> = claimed
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(i % 4, 1 | 2))
        .map(|(_, task)| task.id)
        .collect();
    let retried = store
        .task_retry_many(&TaskSelector::Ids(problem_ids), "admin")
        .await
        .unwrap();
    assert_eq!(retried.changed.len(), 5);
    let queued = store
        .task_list(
            &queue::TaskFilter {
                statuses: vec![queue::TaskStatus::Queued],
                ..Default::default()
            },
            queue::Page::first(1),
        )
        .await
        .unwrap();
    store
        .task_abandon(queued[0].id, "not needed", "admin")
        .await
        .unwrap();
    assert_eq!(
        bundle.db.scalar(WRONGLY_DERIVED).await,
        0,
        "after the admin's repairs"
    );

    // Statements typed by hand, which name neither derived column.
    for sql in [
        "UPDATE queue_task SET unique_key = 'typed-key' WHERE id = (SELECT id FROM queue_task \
         WHERE unique_key IS NULL AND workflow_status = 'QUEUED' ORDER BY id LIMIT 1)",
        "UPDATE queue_task SET workflow_status = 'FAILURE' WHERE workflow_status = 'QUEUED'",
        "UPDATE queue_task SET workflow_status = 'QUEUED', workflow_stopped_date = NULL \
         WHERE workflow_status = 'COMPLETED'",
        "UPDATE queue_task SET workflow_status = 'ABANDONED' WHERE workflow_status = 'FAILURE'",
    ] {
        bundle.db.conn.execute_unprepared(sql).await.unwrap();
        assert_eq!(bundle.db.scalar(WRONGLY_DERIVED).await, 0, "after {sql}");
    }
    bundle.assert_kept_tables_match_rows().await;
}

async fn a_key_is_free_again_once_its_task_ends(db: TestDatabase) {
    let bundle = setup(db).await;
    let store = &bundle.store;
    let keyed = || new_task("test.derived").with_unique_key("only-one");
    let first = store.enqueue(store.db(), keyed()).await.unwrap();
    let again = store.enqueue(store.db(), keyed()).await.unwrap();
    assert_eq!(again.id, first.id, "an active task holds the key");

    let claimed = claim(store, 1).await;
    let running = store.enqueue(store.db(), keyed()).await.unwrap();
    assert_eq!(running.id, first.id, "a running task still holds the key");

    store
        .task_finish_many_if_running(&[Finish::complete(&claimed[0])], Utc::now(), "derived-node")
        .await
        .unwrap();
    let next = store.enqueue(store.db(), keyed()).await.unwrap();
    assert_ne!(next.id, first.id, "the completed task let go of its key");

    bundle
        .db
        .conn
        .execute_unprepared(
            "UPDATE queue_task SET workflow_status = 'ABANDONED' \
             WHERE unique_key = 'only-one' AND workflow_status = 'QUEUED'",
        )
        .await
        .unwrap();
    let after_typed = store.enqueue(store.db(), keyed()).await.unwrap();
    assert_ne!(
        after_typed.id, next.id,
        "a task abandoned by hand let go of its key"
    );
    assert_eq!(bundle.db.scalar(WRONGLY_DERIVED).await, 0);
}
