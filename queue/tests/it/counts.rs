//! The counts by status and the throughput that triggers keep: they agree with the rows
//! after changes of every kind made from many sessions at once, and compaction keeps them.

use chrono::{TimeDelta, Utc};
use queue::testing::{Backend, TestDatabase};
use queue::{Finish, Store, TaskGetAvailableParams, TaskSelector, Transition};

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    counts_follow_every_change_from_many_sessions,
    statements_after_a_claim_in_its_transaction_are_counted,
    counts_survive_rolling_the_last_migration_back_and_forth,
);

/// Sessions writing at once: on PostgreSQL each store has a pool of its own, so each
/// writes its own shard of the counts.
const SESSIONS: usize = 4;

async fn counts_follow_every_change_from_many_sessions(db: TestDatabase) {
    let bundle = setup(db).await;
    let mut stores = Vec::new();
    for _ in 0..SESSIONS {
        stores.push(match bundle.db.backend {
            Backend::Sqlite => bundle.store.clone(),
            Backend::Postgres => {
                Store::new(queue::database::connect(&bundle.db.url, 2).await.unwrap())
            }
        });
    }
    // Each session enqueues, claims, completes, fails and retries its share concurrently.
    let mut sessions = tokio::task::JoinSet::new();
    for (session, store) in stores.into_iter().enumerate() {
        sessions.spawn(async move {
            let tasks = (0..60)
                .map(|i| new_task(if i % 3 == 0 { "test.b" } else { "test.a" }))
                .collect();
            store.enqueue_many(store.db(), tasks).await.unwrap();
            let node = format!("counts-{session}");
            let claimed = store
                .task_get_available(TaskGetAvailableParams {
                    max: 30,
                    now: Utc::now(),
                    node_id: &node,
                    take_turns: true,
                    on_node: &[],
                })
                .await
                .unwrap();
            let finishes: Vec<Finish> = claimed
                .iter()
                .enumerate()
                .map(|(i, task)| Finish {
                    task_id: task.id,
                    lease_version: task.lease_version,
                    transition: match i % 5 {
                        0 => Transition::Fail {
                            error: "bad input".into(),
                        },
                        1 => Transition::Retry {
                            at: Utc::now() + TimeDelta::hours(1),
                            error: "blip".into(),
                        },
                        _ => Transition::Complete,
                    },
                })
                .collect();
            store
                .task_finish_many_if_running(&finishes, Utc::now(), &node)
                .await
                .unwrap();
            finishes
                .iter()
                .filter(|finish| matches!(finish.transition, Transition::Fail { .. }))
                .count()
        });
    }
    // A panic in a session fails the test here. A claim racing another on PostgreSQL may
    // hand out fewer than it was asked for (a row another session took between the choice
    // and the lock drops out), so the failures are counted, not derived from `max`.
    let failures: usize = sessions.join_all().await.into_iter().sum();
    bundle.assert_kept_tables_match_rows().await;
    assert_eq!(
        bundle
            .store
            .task_throughput(Utc::now(), 5)
            .await
            .unwrap()
            .iter()
            .sum::<i64>(),
        bundle
            .db
            .scalar("SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'COMPLETED'")
            .await
    );

    // Admin repairs of many tasks at once, then pruning.
    let failed = queue::TaskFilter {
        statuses: vec![queue::TaskStatus::Failure],
        ..Default::default()
    };
    let retried = bundle
        .store
        .task_retry_many(&TaskSelector::Filter(failed), "admin")
        .await
        .unwrap();
    assert_eq!(retried.changed.len(), failures);
    assert!(failures > 0);
    let queued_b = queue::TaskFilter {
        statuses: vec![queue::TaskStatus::Queued],
        component: Some("test.b".into()),
        ..Default::default()
    };
    bundle
        .store
        .task_abandon_many(&TaskSelector::Filter(queued_b), "not needed", "admin")
        .await
        .unwrap();
    bundle.assert_kept_tables_match_rows().await;
    let pruned = bundle
        .store
        .task_prune(Utc::now() + TimeDelta::seconds(1), 1000)
        .await
        .unwrap();
    assert!(pruned > 0);
    bundle.assert_kept_tables_match_rows().await;
    if bundle.db.backend == Backend::Postgres {
        let shards = bundle
            .db
            .scalar("SELECT COUNT(DISTINCT shard) FROM queue_task_count")
            .await;
        assert!(shards > 1, "the sessions wrote {shards} shard(s)");
    }

    // Compaction folds the shards and drops zero counts; the counts and the last minutes'
    // throughput stay as they were.
    let now = Utc::now();
    let throughput = bundle.store.task_throughput(now, 5).await.unwrap();
    bundle
        .store
        .counts_compact(Utc::now() - TimeDelta::hours(1))
        .await
        .unwrap();
    bundle.assert_kept_tables_match_rows().await;
    assert_eq!(
        bundle.store.task_throughput(now, 5).await.unwrap(),
        throughput
    );
    assert_eq!(
        bundle
            .db
            .scalar("SELECT COUNT(*) FROM queue_task_count WHERE shard <> 0 OR tasks = 0")
            .await,
        0
    );
}

/// PostgreSQL's claim and completion count their own changes and have the trigger pass
/// over them (ADR 0007) for as long as they run: an UPDATE after them in the same
/// transaction is the trigger's to count again. Without that, the later writes of a
/// transaction that claimed would be missing from the counts and the claim entries.
async fn statements_after_a_claim_in_its_transaction_are_counted(db: TestDatabase) {
    let bundle = setup(db).await;
    if bundle.db.backend != Backend::Postgres {
        return;
    }
    let tasks = (0..6).map(|_| new_task("test.a")).collect();
    bundle
        .store
        .enqueue_many(bundle.store.db(), tasks)
        .await
        .unwrap();
    let txn = sea_orm::TransactionTrait::begin(&bundle.db.conn)
        .await
        .unwrap();
    for sql in [
        "SELECT id FROM queue_claim(now(), 'counted-node', 2)",
        "SELECT id FROM queue_complete( \
             ARRAY(SELECT id FROM queue_task WHERE workflow_status = 'EXECUTING' \
                   ORDER BY id LIMIT 1), \
             ARRAY(SELECT lease_version FROM queue_task WHERE workflow_status = 'EXECUTING' \
                   ORDER BY id LIMIT 1), now(), 'counted-node')",
        "UPDATE queue_task SET workflow_status = 'ABANDONED', lease_version = lease_version + 1 \
         WHERE workflow_status IN ('QUEUED', 'EXECUTING') \
           AND id IN (SELECT id FROM queue_task ORDER BY id LIMIT 5)",
    ] {
        sea_orm::ConnectionTrait::execute_unprepared(&txn, sql)
            .await
            .unwrap();
    }
    txn.commit().await.unwrap();
    assert!(
        bundle
            .db
            .scalar("SELECT COUNT(*) FROM queue_task WHERE workflow_status = 'ABANDONED'")
            .await
            > 0
    );
    bundle.assert_kept_tables_match_rows().await;
}

/// The last migration rolls back and forward again, and the counts and claim entries still
/// follow a claim and its completion after each step (a claim without turns, the one the
/// schema before the owners' turns has).
async fn counts_survive_rolling_the_last_migration_back_and_forth(db: TestDatabase) {
    use sea_orm_migration::MigratorTrait;
    let bundle = setup(db).await;
    let store = &bundle.store;
    let claim = async |max: u32| {
        let claimed = store
            .task_get_available(TaskGetAvailableParams {
                max,
                now: Utc::now(),
                node_id: "rolling-node",
                take_turns: false,
                on_node: &[],
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), max as usize);
        claimed
    };
    let round = async || {
        let tasks = (0..10).map(|_| new_task("test.a")).collect();
        store.enqueue_many(store.db(), tasks).await.unwrap();
        let claimed = claim(4).await;
        let finishes: Vec<Finish> = claimed.iter().map(Finish::complete).collect();
        let finished = store
            .task_finish_many_if_running(&finishes, Utc::now(), "rolling-node")
            .await
            .unwrap();
        assert_eq!(finished.len(), 4);
        bundle.assert_kept_tables_match_rows().await;
    };
    round().await;
    // On one connection, as `database::migrate` does: a pooled SQLite connection that did not
    // run a DROP TRIGGER still parses a CREATE TRIGGER against the schema it had cached.
    let migrating = queue::database::connect(&bundle.db.url, 1).await.unwrap();
    queue::schema::QueueMigrator::down(&migrating, Some(1))
        .await
        .unwrap();
    // Only the claim: the completion of this version calls the function rolled back.
    claim(2).await;
    bundle.assert_kept_tables_match_rows().await;
    queue::schema::QueueMigrator::up(&migrating, None)
        .await
        .unwrap();
    round().await;
}
