use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use caseload::search::search_people;
use caseload::users::Role;
use caseload::watches::{unwatch, watch};
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use uuid::Uuid;

use crate::helpers::{actor, people};

queue::backend_tests!(Migrator => watching_is_idempotent_and_scoped);

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
    assert_eq!((first.changed, first.unchanged), (3, 0));
    assert_eq!(
        (first.forbidden, first.unknown),
        (theirs.clone(), vec![nobody])
    );
    // Watching again (or a batch re-run) is not an error and adds nothing.
    let again = watch(&db.conn, &me, &all, Utc::now()).await.unwrap();
    assert_eq!((again.changed, again.unchanged), (0, 3));
    assert_eq!(watched(&db, me.id).await, 3);
    // Watches are personal.
    assert_eq!(watched(&db, colleague.id).await, 0);

    let removed = unwatch(&db.conn, &me, &mine[..2]).await.unwrap();
    assert_eq!(removed.changed, 2);
    let removed_again = unwatch(&db.conn, &me, &mine[..2]).await.unwrap();
    assert_eq!((removed_again.changed, removed_again.unchanged), (0, 2));
    assert_eq!(watched(&db, me.id).await, 1);
    // Unwatching is never limited by scope: it only removes one's own bookmark.
    let unscoped = unwatch(&db.conn, &me, &theirs).await.unwrap();
    assert!(unscoped.forbidden.is_empty());
}
