//! The planner's statistics: the node takes them where a table was never analysed or has
//! grown tenfold (on SQLite also shrunk, or has an index without statistics, such as an
//! empty partial one), on both backends.

use queue::Store;
use queue::testing::{Backend, TestDatabase};
use sea_orm::{ConnectionTrait, Statement};

use crate::new_task;

queue::backend_tests!(queue::schema::QueueMigrator =>
    statistics_follow_a_table_that_was_filled_and_grew,
);

async fn statistics_follow_a_table_that_was_filled_and_grew(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    store.refresh_planner_statistics().await.unwrap();
    let tasks = |n: usize| (0..n).map(|_| new_task("test.stats")).collect::<Vec<_>>();
    store.enqueue_many(store.db(), tasks(50)).await.unwrap();
    store.refresh_planner_statistics().await.unwrap();
    assert_eq!(
        analysed_rows(&db).await,
        Some(50),
        "a filled table is analysed"
    );
    store.enqueue_many(store.db(), tasks(5000)).await.unwrap();
    store.refresh_planner_statistics().await.unwrap();
    let rows = analysed_rows(&db).await.unwrap_or_default();
    assert!(
        rows > 1000,
        "a hundredfold table is analysed again ({rows} rows)"
    );
}

/// The rows of `queue_task` as its statistics last recorded them: on SQLite the largest
/// index's (a partial index counts only its own rows), on PostgreSQL the table's.
async fn analysed_rows(db: &TestDatabase) -> Option<u64> {
    let sql = match db.backend {
        Backend::Sqlite => "SELECT stat FROM sqlite_stat1 WHERE tbl = 'queue_task'",
        Backend::Postgres => {
            "SELECT reltuples::bigint::text FROM pg_class WHERE oid = 'queue_task'::regclass \
             AND reltuples >= 0"
        }
    };
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(db.conn.get_database_backend(), sql))
        .await
        .ok()?;
    rows.iter()
        .filter_map(|row| row.try_get_by_index::<String>(0).ok())
        .filter_map(|stat| stat.split(' ').next()?.parse().ok())
        .max()
}
