//! SQLite: a running node copies its WAL into the database file itself, well before the
//! `wal_autocheckpoint` mark at which a writer's commit would do it while holding the write
//! gate (ADR 0052). PostgreSQL has nothing of the kind.

use std::path::PathBuf;
use std::time::Duration;

use queue::Registry;
use queue::testing::{self, Backend, TestDatabase};

use super::{new_task, setup};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_running_node_copies_the_wal_into_the_database_file,
);

async fn a_running_node_copies_the_wal_into_the_database_file(db: TestDatabase) {
    if db.backend != Backend::Sqlite {
        return;
    }
    let file = PathBuf::from(
        db.url
            .trim_start_matches("sqlite://")
            .split('?')
            .next()
            .unwrap(),
    );
    let mut bundle = setup(db).await;
    let length = || std::fs::metadata(&file).unwrap().len();
    // A few megabytes of WAL, far below the mark (160 MB): SQLite alone leaves them there.
    let tasks = (0..5_000).map(|_| new_task("test.wal")).collect();
    bundle
        .store
        .enqueue_many(bundle.store.db(), tasks)
        .await
        .unwrap();
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
