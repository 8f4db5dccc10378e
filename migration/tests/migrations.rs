//! Every migration applies, rolls back and re-applies on both backends.

use migration::{Migrator, MigratorTrait};
use queue::testing::TestDatabase;

queue::backend_tests!(Migrator => apply_roll_back_and_reapply);

async fn apply_roll_back_and_reapply(db: TestDatabase) {
    // One connection, as `bulkq migrate` uses: a SQLite connection whose schema cache is
    // stale (another of a pool's connections dropped a trigger) refuses to create that
    // trigger again ("already exists") without looking at the database.
    let conn = queue::database::connect(&db.url, 1).await.unwrap();
    // TestDatabase::create has applied every migration; none may be left pending.
    assert!(
        Migrator::get_pending_migrations(&conn)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM program_status").await, 7);

    Migrator::down(&conn, None)
        .await
        .expect("roll back every migration");
    assert_eq!(
        Migrator::get_pending_migrations(&conn).await.unwrap().len(),
        Migrator::migrations().len()
    );

    Migrator::up(&conn, None)
        .await
        .expect("re-apply every migration");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM program_status").await, 7);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 0);
}
