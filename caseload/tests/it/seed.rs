use caseload::seed::{SeedOptions, seed_people};
use migration::Migrator;
use queue::testing::TestDatabase;

queue::backend_tests!(Migrator => seeding_adds_valid_people_and_continues_numbering);

async fn seeding_adds_valid_people_and_continues_numbering(db: TestDatabase) {
    let options = SeedOptions {
        people: 2_500,
        seed: 1,
        coaches: vec![],
    };
    assert_eq!(seed_people(&db.conn, &options).await.unwrap(), 2_500);
    // Ids are time-ordered: the primary key order is the order the people were made in.
    let out_of_order = db
        .scalar(
            "SELECT COUNT(*) FROM (SELECT school_id, LAG(school_id) OVER (ORDER BY id) AS before \
             FROM person) AS walk WHERE before > school_id",
        )
        .await;
    assert_eq!(out_of_order, 0);
    // Seeding again adds more people with new school ids instead of failing on duplicates.
    assert_eq!(seed_people(&db.conn, &options).await.unwrap(), 2_500);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 5_000);
    assert_eq!(
        db.scalar("SELECT COUNT(DISTINCT school_id) FROM person")
            .await,
        5_000
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE coach_id IS NOT NULL")
            .await,
        0
    );
    // Most, not all, people have an email address; every status is a known one.
    let with_email = db
        .scalar("SELECT COUNT(*) FROM person WHERE email IS NOT NULL")
        .await;
    assert!(
        (4_000..5_000).contains(&with_email),
        "{with_email} of 5000 have email"
    );
    let unknown_status = db
        .scalar("SELECT COUNT(*) FROM person WHERE program_status NOT IN (SELECT code FROM program_status)")
        .await;
    assert_eq!(unknown_status, 0);
}
