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

/// The product's list names the queue's migrations one by one; a queue migration left out
/// would leave every product database without it while the queue's own tests pass.
#[test]
fn every_queue_migration_is_in_the_product_list() {
    let names = |migrations: Vec<Box<dyn sea_orm_migration::MigrationTrait>>| -> Vec<String> {
        migrations.iter().map(|m| m.name().to_owned()).collect()
    };
    let product = names(migration::Migrator::migrations());
    for queue in names(queue::schema::QueueMigrator::migrations()) {
        assert!(product.contains(&queue), "{queue} is missing from Migrator");
    }
}
