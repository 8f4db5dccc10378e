//! SQLite: a running node copies its WAL into the database file itself, well before the
//! `wal_autocheckpoint` mark at which a writer's commit would do it while holding the write
//! gate (ADR 0052); or, left to an external replicator, never. PostgreSQL has nothing of
//! the kind.

use std::path::PathBuf;
use std::time::Duration;

use queue::database::{PoolSettings, WalCheckpoints};
use queue::testing::{self, Backend, TestDatabase};
use queue::{Registry, Store};
use sea_orm::{ConnectionTrait, Statement};

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_running_node_copies_the_wal_into_the_database_file,
    a_node_leaves_the_wal_to_a_replicator,
);

/// Writes a few megabytes of WAL: 5,000 tasks enqueued.
async fn write_wal(store: &Store) {
    let tasks = (0..5_000).map(|_| new_task("test.wal")).collect();
    store.enqueue_many(store.db(), tasks).await.unwrap();
}

/// The database file of a SQLite test database.
fn database_file(db: &TestDatabase) -> PathBuf {
    PathBuf::from(
        db.url
            .trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap(),
    )
}

async fn a_running_node_copies_the_wal_into_the_database_file(db: TestDatabase) {
    if db.backend != Backend::Sqlite {
        return;
    }
    let file = database_file(&db);
    let mut bundle = setup(db).await;
    let length = || std::fs::metadata(&file).unwrap().len();
    // A few megabytes of WAL, far below the mark (160 MB): SQLite alone leaves them there.
    write_wal(&bundle.store).await;
    let before = length();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(length(), before, "nothing copies the WAL without a node");

    let runtime = bundle.start("wal-node", Registry::new()).await;
    testing::wait_until(
        &mut bundle.events,
        Duration::from_secs(10),
        "the node copied the WAL into the database file",
        async || length() > before + 1_000_000,
    )
    .await;
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// Opened for a replicator, no connection checkpoints at any mark and the node runs none:
/// the database file stays as it was while the WAL holds everything since. Proving that
/// nothing happens takes a wait: three times the node's checkpoint interval, within which
/// the test above sees the copy.
async fn a_node_leaves_the_wal_to_a_replicator(db: TestDatabase) {
    if db.backend != Backend::Sqlite {
        return;
    }
    let file = database_file(&db);
    let settings = PoolSettings {
        wal_checkpoints: WalCheckpoints::Replicator,
        ..PoolSettings::new(4)
    };
    let pool = queue::database::connect_with(&db.url, &settings)
        .await
        .unwrap();
    let mark = pool
        .query_one_raw(Statement::from_string(
            pool.get_database_backend(),
            "PRAGMA wal_autocheckpoint",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap();
    assert_eq!(mark, 0, "connections never checkpoint");
    let mut bundle = setup(db).await;
    bundle.store = Store::new(pool);
    write_wal(&bundle.store).await;
    let length = || std::fs::metadata(&file).unwrap().len();
    let before = length();
    let runtime = bundle.start("replicated-node", Registry::new()).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(length(), before, "the node left the WAL alone");
    runtime.shutdown(Duration::from_secs(5)).await;
}
