use bulkq_types::actions::ActionKind;
use bulkq_types::filter::PersonFilter;
use bulkq_types::outcomes::PersonOutcome;
use caseload::access::Actor;
use caseload::outcomes::{self, record_batch};
use caseload::search::people_after;
use caseload::seed::{SeedOptions, seed_people};
use caseload::status_change::{StatusChange, change_status};
use caseload::store::entity::{person, program_status_change as history};
use caseload::users::Role;
use caseload::{CaseloadError, MAX_BATCH};
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, TransactionTrait};
use uuid::Uuid;

use crate::helpers::{actor, people};

queue::backend_tests!(Migrator =>
    changes_record_history_once_per_task,
    bad_status_unknown_and_forbidden_people_are_reported,
    a_full_batch_and_more_in_batches,
);

fn graduate() -> StatusChange {
    StatusChange {
        to_status: "GRADUATED".into(),
        reason: "  finished the program ".into(),
    }
}

async fn set_status(db: &TestDatabase, id: Uuid, status: &str) {
    person::Entity::update_many()
        .col_expr(person::Column::ProgramStatus, Expr::value(status))
        .filter(person::Column::Id.eq(id))
        .exec(&db.conn)
        .await
        .unwrap();
}

async fn changes_record_history_once_per_task(db: TestDatabase) {
    let admin = actor(&db, "admin", Role::Admin).await;
    let ids = people(&db, "hist", 5, None).await;
    let task = Uuid::now_v7();
    // One of them is already graduated: no change, no history row.
    set_status(&db, ids[4], "GRADUATED").await;

    let first = change_status(&db.conn, task, &admin, &graduate(), &ids, Utc::now())
        .await
        .unwrap();
    assert_eq!((first.changed.len(), first.unchanged.len()), (4, 1));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE program_status = 'GRADUATED'")
            .await,
        5
    );
    let recorded = history::Entity::find()
        .filter(history::Column::TaskId.eq(task))
        .all(&db.conn)
        .await
        .unwrap();
    assert_eq!(recorded.len(), 4);
    for row in &recorded {
        assert_eq!(
            (
                row.from_status.as_str(),
                row.to_status.as_str(),
                row.reason.as_str()
            ),
            ("ACTIVE", "GRADUATED", "finished the program")
        );
        assert_eq!(row.changed_by, admin.id);
    }
    let updated_by_admin = person::Entity::find()
        .filter(person::Column::UpdatedBy.eq(admin.id))
        .count(&db.conn)
        .await
        .unwrap();
    assert_eq!(updated_by_admin, 4);

    // Someone moves a person back; a re-run of the same batch (a crash after commit, say)
    // still changes nothing and records nothing: the task already did its part.
    set_status(&db, ids[0], "ACTIVE").await;
    let again = change_status(&db.conn, task, &admin, &graduate(), &ids, Utc::now())
        .await
        .unwrap();
    assert_eq!((again.changed.len(), again.unchanged.len()), (0, 5));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM program_status_change")
            .await,
        4
    );
    // The owner's download lists each person once, read two at a time: the four changed
    // from the task's history, though the re-run called them unchanged.
    for report in [&first, &again] {
        record_batch(&db.conn, task, ActionKind::ProgramStatusChange, report)
            .await
            .unwrap();
    }
    let mut expected: Vec<(Uuid, PersonOutcome)> = ids
        .iter()
        .map(|id| match *id == ids[4] {
            true => (*id, PersonOutcome::Unchanged),
            false => (*id, PersonOutcome::Changed),
        })
        .collect();
    expected.sort_by_key(|(id, _)| *id);
    let mut listed = Vec::new();
    loop {
        let after = listed.last().map(|(id, _)| *id);
        let page = outcomes::page(&db.conn, task, ActionKind::ProgramStatusChange, after, 2)
            .await
            .unwrap();
        if page.is_empty() {
            break;
        }
        listed.extend(page.into_iter().map(|line| (line.person_id, line.outcome)));
    }
    assert_eq!(listed, expected);
    // A new task does change them again.
    let other = change_status(
        &db.conn,
        Uuid::now_v7(),
        &admin,
        &graduate(),
        &ids,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(other.changed.len(), 1);

    // A batch that rolls back leaves nothing behind, and its re-run records everyone.
    let rollback_task = Uuid::now_v7();
    let to_inactive = StatusChange {
        to_status: "INACTIVE".into(),
        reason: "left".into(),
    };
    let txn = db.conn.begin().await.unwrap();
    change_status(&txn, rollback_task, &admin, &to_inactive, &ids, Utc::now())
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    let rerun = change_status(
        &db.conn,
        rollback_task,
        &admin,
        &to_inactive,
        &ids,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(rerun.changed.len(), 5);
    let recorded = history::Entity::find()
        .filter(history::Column::TaskId.eq(rollback_task))
        .count(&db.conn)
        .await
        .unwrap();
    assert_eq!(recorded, 5);
}

async fn bad_status_unknown_and_forbidden_people_are_reported(db: TestDatabase) {
    let me = actor(&db, "me", Role::Staff).await;
    let colleague = actor(&db, "colleague", Role::Staff).await;
    let mine = people(&db, "mine", 2, Some(me.id)).await;
    let unassigned = people(&db, "free", 1, None).await;
    let theirs = people(&db, "theirs", 2, Some(colleague.id)).await;
    let nobody = Uuid::now_v7();
    let all = [
        mine.clone(),
        unassigned.clone(),
        theirs.clone(),
        vec![nobody],
    ]
    .concat();

    let bad = StatusChange {
        to_status: "ON_THE_MOON".into(),
        reason: "why not".into(),
    };
    let result = change_status(&db.conn, Uuid::now_v7(), &me, &bad, &all, Utc::now()).await;
    assert!(matches!(result, Err(CaseloadError::UnknownStatus(code)) if code == "ON_THE_MOON"));
    let no_reason = StatusChange {
        reason: " ".into(),
        ..graduate()
    };
    let result = change_status(&db.conn, Uuid::now_v7(), &me, &no_reason, &all, Utc::now()).await;
    assert!(matches!(result, Err(CaseloadError::Invalid(_))));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE program_status <> 'ACTIVE'")
            .await,
        0
    );

    // Staff reach their own and unassigned people; a colleague's are reported, not touched.
    let report = change_status(&db.conn, Uuid::now_v7(), &me, &graduate(), &all, Utc::now())
        .await
        .unwrap();
    assert_eq!(report.changed.len(), 3);
    assert_eq!(report.forbidden, theirs);
    assert_eq!(report.unknown, vec![nobody]);
    let touched = person::Entity::find()
        .filter(person::Column::CoachId.eq(colleague.id))
        .filter(person::Column::ProgramStatus.ne("ACTIVE"))
        .count(&db.conn)
        .await
        .unwrap();
    assert_eq!(touched, 0);
    // A task's run_as user is loaded with their role; a deleted one is a clear error.
    assert_eq!(Actor::load(&db.conn, me.id).await.unwrap(), me);
    assert!(matches!(
        Actor::load(&db.conn, nobody).await,
        Err(CaseloadError::UnknownUser(id)) if id == nobody
    ));
    // An admin reaches everyone.
    let admin = actor(&db, "admin", Role::Admin).await;
    let report = change_status(
        &db.conn,
        Uuid::now_v7(),
        &admin,
        &graduate(),
        &all,
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!((report.changed.len(), report.forbidden.len()), (2, 0));
}

/// One largest batch's worth of people and a part batch more, walked by keyset in batches
/// of [`MAX_BATCH`], each in its own transaction, as the executor does it; then the same walk
/// again changes nothing. (`make bench` changes the status of a million people.)
async fn a_full_batch_and_more_in_batches(db: TestDatabase) {
    const PEOPLE: u64 = MAX_BATCH as u64 + 1_500;
    seed_people(
        &db.conn,
        &SeedOptions {
            people: PEOPLE,
            seed: 3,
            coaches: vec![],
        },
    )
    .await
    .unwrap();
    let admin = actor(&db, "admin", Role::Admin).await;
    let change = StatusChange {
        to_status: "TRANSFERRED".into(),
        reason: "district merger".into(),
    };
    let already = db
        .scalar("SELECT COUNT(*) FROM person WHERE program_status = 'TRANSFERRED'")
        .await as u64;
    let task = Uuid::now_v7();
    for round in 0..2 {
        let (mut after, mut changed, mut visited) = (None, 0, 0);
        loop {
            let batch = people_after(
                &db.conn,
                &PersonFilter::default(),
                &admin,
                after,
                MAX_BATCH as u64,
            )
            .await
            .unwrap();
            let Some(last) = batch.last_visited else {
                break;
            };
            after = Some(last);
            let ids: Vec<Uuid> = batch.people.iter().map(|p| p.id).collect();
            let txn = db.conn.begin().await.unwrap();
            changed += change_status(&txn, task, &admin, &change, &ids, Utc::now())
                .await
                .unwrap()
                .changed
                .len() as u64;
            txn.commit().await.unwrap();
            visited += ids.len() as u64;
        }
        assert_eq!(visited, PEOPLE);
        let expected = if round == 0 { PEOPLE - already } else { 0 };
        assert_eq!(changed, expected, "round {round}");
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE program_status = 'TRANSFERRED'")
            .await as u64,
        PEOPLE
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM program_status_change")
            .await as u64,
        PEOPLE - already
    );
}
