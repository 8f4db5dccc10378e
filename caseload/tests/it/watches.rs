use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use caseload::search::search_people;
use caseload::store::entity::person_watch;
use caseload::users::Role;
use caseload::watches::{unwatch, watch};
use chrono::{SubsecRound, Utc};
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, Statement, TransactionTrait,
};
use uuid::Uuid;

use crate::helpers::{actor, people};

queue::backend_tests!(Migrator => watching_is_idempotent_and_scoped, a_watch_batch_is_one_statement_whatever_its_size);

async fn watched(db: &TestDatabase, staff_user_id: Uuid) -> u64 {
    let filter = PersonFilter {
        watched_by: Some(staff_user_id),
        ..Default::default()
    };
    let page = PageRequest {
        page: 0,
        page_size: 50,
    };
    search_people(&db.conn, &filter, page).await.unwrap().total
}

async fn watching_is_idempotent_and_scoped(db: TestDatabase) {
    let me = actor(&db, "me", Role::Staff).await;
    let colleague = actor(&db, "colleague", Role::Staff).await;
    let mine = people(&db, "mine", 3, Some(me.id)).await;
    let theirs = people(&db, "theirs", 1, Some(colleague.id)).await;
    let nobody = Uuid::now_v7();
    let all = [mine.clone(), theirs.clone(), vec![nobody]].concat();

    let first = watch(&db.conn, &me, &all, Utc::now()).await.unwrap();
    assert_eq!((first.changed.len(), first.unchanged.len()), (3, 0));
    assert_eq!(
        (first.forbidden, first.unknown),
        (theirs.clone(), vec![nobody])
    );
    // Watching again (or a batch re-run) is not an error and adds nothing.
    let again = watch(&db.conn, &me, &all, Utc::now()).await.unwrap();
    assert_eq!((again.changed.len(), again.unchanged.len()), (0, 3));
    assert_eq!(watched(&db, me.id).await, 3);
    // Watches are personal.
    assert_eq!(watched(&db, colleague.id).await, 0);

    let removed = unwatch(&db.conn, &me, &mine[..2]).await.unwrap();
    assert_eq!(removed.changed.len(), 2);
    let removed_again = unwatch(&db.conn, &me, &mine[..2]).await.unwrap();
    assert_eq!(
        (removed_again.changed.len(), removed_again.unchanged.len()),
        (0, 2)
    );
    assert_eq!(watched(&db, me.id).await, 1);
    // Unwatching is never limited by scope: it only removes one's own bookmark.
    let unscoped = unwatch(&db.conn, &me, &theirs).await.unwrap();
    assert!(unscoped.forbidden.is_empty());
}

/// Batches of every size insert with the same statement: a connection that ran three
/// sizes holds one prepared insert into `person_watch` (PostgreSQL shows its connection's
/// prepared statements; on SQLite the rows are checked alone).
async fn a_watch_batch_is_one_statement_whatever_its_size(db: TestDatabase) {
    let me = actor(&db, "me", Role::Staff).await;
    let mine = people(&db, "mine", 6, Some(me.id)).await;
    let now = Utc::now().trunc_subsecs(6);
    let txn = db.conn.begin().await.unwrap();
    for batch in [&mine[..1], &mine[1..3], &mine[3..6]] {
        let report = watch(&txn, &me, batch, now).await.unwrap();
        assert_eq!(report.changed.len(), batch.len());
    }
    if db.conn.get_database_backend() == DbBackend::Postgres {
        let prepared = txn
            .query_one_raw(Statement::from_string(
                DbBackend::Postgres,
                "SELECT COUNT(*) FROM pg_prepared_statements \
                 WHERE statement LIKE 'INSERT INTO %person_watch%'",
            ))
            .await
            .unwrap()
            .unwrap()
            .try_get_by_index::<i64>(0)
            .unwrap();
        assert_eq!(prepared, 1);
    }
    txn.commit().await.unwrap();
    let watches = person_watch::Entity::find()
        .filter(person_watch::Column::StaffUserId.eq(me.id))
        .all(&db.conn)
        .await
        .unwrap();
    let mut watched: Vec<Uuid> = watches.iter().map(|w| w.person_id).collect();
    watched.sort();
    let mut expected = mine.clone();
    expected.sort();
    assert_eq!(watched, expected);
    assert!(watches.iter().all(|w| w.created_at == now));
}
