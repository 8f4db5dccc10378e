//! The connection settings the queue's guarantees and speed rest on, as the pool actually
//! has them (a setting sqlx or the server ignored would otherwise go unnoticed).

use queue::testing::{Backend, TestDatabase};
use queue::{Store, TaskStatus};
use sea_orm::{ConnectionTrait, DatabaseTransaction, Statement, TransactionTrait};

use super::new_task;

queue::backend_tests!(queue::schema::QueueMigrator =>
    connections_are_durable_and_tuned,
    new_connections_leave_queued_tasks_alone,
    pools_run_no_reaper,
    sqlite_writes_keep_one_connection,
    a_statement_over_the_limit_is_stopped_and_its_connection_serves_on,
);

/// sqlx's reaper can spin forever (ADR 0039); it starts only with an idle timeout or a
/// lifetime, so the pool has neither.
async fn pools_run_no_reaper(db: TestDatabase) {
    let (idle_timeout, max_lifetime) = match db.backend {
        Backend::Sqlite => {
            let options = db.conn.get_sqlite_connection_pool().options();
            (options.get_idle_timeout(), options.get_max_lifetime())
        }
        Backend::Postgres => {
            let options = db.conn.get_postgres_connection_pool().options();
            (options.get_idle_timeout(), options.get_max_lifetime())
        }
    };
    assert_eq!((idle_timeout, max_lifetime), (None, None));
}

async fn connections_are_durable_and_tuned(db: TestDatabase) {
    match db.backend {
        Backend::Sqlite => {
            // Settings are per connection: hold four at once, so each is a different one.
            let mut held = Vec::new();
            for _ in 0..4 {
                held.push(db.conn.begin().await.unwrap());
            }
            for conn in &held {
                let wal = "SELECT journal_mode = 'wal' FROM pragma_journal_mode";
                assert_eq!(integer(conn, wal).await, 1, "WAL mode");
                assert_eq!(integer(conn, "PRAGMA synchronous").await, 2, "FULL");
                assert_eq!(integer(conn, "PRAGMA foreign_keys").await, 1);
                assert_eq!(integer(conn, "PRAGMA wal_autocheckpoint").await, 40_000);
                assert_eq!(integer(conn, "PRAGMA temp_store").await, 2, "MEMORY");
            }
        }
        Backend::Postgres => {
            // The product sets nothing here, but its durability claim assumes the server's
            // default: a commit is flushed before it returns.
            let flushed = db
                .scalar("SELECT (current_setting('synchronous_commit') <> 'off')::int::bigint")
                .await;
            assert_eq!(flushed, 1, "synchronous_commit must not be off");
        }
    }
}

async fn integer(conn: &DatabaseTransaction, sql: &str) -> i64 {
    let row = conn
        .query_one_raw(Statement::from_string(conn.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index(0).unwrap()
}

/// Every new PostgreSQL connection warms the claim with a claim of none
/// (`queue::database`): opening connections, however many, claims nothing.
async fn new_connections_leave_queued_tasks_alone(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let mut txn = store.begin_queue().await.unwrap();
    let queued = txn.enqueue(new_task("test.noop")).await.unwrap();
    txn.commit().await.unwrap();

    let pool = queue::database::connect(&db.url, 4).await.unwrap();
    let mut held = Vec::new();
    for _ in 0..4 {
        // Held at once, so each is a connection of its own, opened (and warmed) for it.
        held.push(pool.begin().await.unwrap());
    }
    drop(held);
    pool.close().await.unwrap();

    let task = store.task_get(queued.id).await.unwrap().unwrap();
    assert_eq!(task.workflow_status, TaskStatus::Queued);
    assert_eq!(task.attempt, queued.attempt, "no attempt was spent");
    assert_eq!(
        task.lease_version, queued.lease_version,
        "no lease was taken"
    );
}

/// On SQLite a store's write transactions, its clones' and those of the store on another
/// pool (`Store::on_pool`) included, all run on one connection with a larger page cache
/// (`database::sqlite_writer`): what one of them leaves on its connection (a TEMP table,
/// seen by no other connection) the next one finds.
async fn sqlite_writes_keep_one_connection(db: TestDatabase) {
    if db.backend != Backend::Sqlite {
        return;
    }
    let store = Store::new(db.conn.clone());
    let on_other_pool = store.on_pool(queue::database::connect(&db.url, 2).await.unwrap());
    let txn = store.begin_write().await.unwrap();
    assert_eq!(integer(&txn, "PRAGMA cache_size").await, -16_384);
    txn.execute_unprepared("CREATE TEMP TABLE left_by_a_writer (x INTEGER)")
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let probe = "SELECT COUNT(*) FROM temp.sqlite_master WHERE name = 'left_by_a_writer'";
    for writer in [store.clone(), on_other_pool] {
        let txn = writer.begin_write().await.unwrap();
        assert_eq!(integer(&txn, probe).await, 1);
        txn.rollback().await.unwrap();
    }
    let pooled = db.conn.begin().await.unwrap();
    assert_eq!(
        integer(&pooled, probe).await,
        0,
        "a pooled connection is another"
    );
    assert_eq!(integer(&pooled, "PRAGMA cache_size").await, -2_000);
}

/// The database stops a statement of a limited pool at the limit, not at its end, and the
/// one connection of the pool answers the next statement. Without the limit the slow
/// statement would run its 30 s (PostgreSQL's sleep; SQLite's count to a billion, minutes)
/// and succeed, failing the test.
async fn a_statement_over_the_limit_is_stopped_and_its_connection_serves_on(db: TestDatabase) {
    let limit = std::time::Duration::from_millis(300);
    let settings = queue::database::PoolSettings {
        statement_limit: Some(limit),
        ..queue::database::PoolSettings::new(1)
    };
    let pool = queue::database::connect_with(&db.url, &settings)
        .await
        .unwrap();
    let (slow, stopped) = match db.backend {
        Backend::Postgres => ("SELECT pg_sleep(30)", "statement timeout"),
        Backend::Sqlite => (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
             WHERE i < 1000000000) SELECT COUNT(*) FROM n",
            "interrupted",
        ),
    };
    let error = pool
        .execute_unprepared(slow)
        .await
        .expect_err("stopped at the limit")
        .to_string();
    assert!(error.contains(stopped), "{error}");
    let backend = pool.get_database_backend();
    let next = pool
        .query_one_raw(Statement::from_string(backend, "SELECT CAST(1 AS BIGINT)"))
        .await
        .unwrap()
        .expect("a row");
    assert_eq!(next.try_get_by_index::<i64>(0).unwrap(), 1);
}
