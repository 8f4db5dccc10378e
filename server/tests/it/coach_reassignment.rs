//! Coach reassignment through the JSON API: staff move the people of their caseload to
//! another coach (never someone else's), each move recorded once with who, from whom, to
//! whom and when; a coach who does not exist or is disabled is refused by field; a batch run
//! again moves nobody twice; a saved query moves the people its walk finds, each from the
//! coach they had.

use axum::http::StatusCode;
use caseload::access::Actor;
use caseload::coach_reassignment::reassign;
use caseload::store::entity::{coach_change, person};
use caseload::testing::insert_people;
use caseload::users::{Role, StaffUser};
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use uuid::Uuid;

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    staff_move_their_caseload_to_another_coach,
    a_saved_query_moves_the_people_its_walk_found,
    a_coach_that_cannot_take_people_is_refused_by_field,
    a_batch_run_again_moves_nobody_twice,
);

const PATH: &str = "/api/1/caseload/coach-reassignments";

/// Sam's caseload among colleagues': Sam's three people, an unassigned one, two of Ola's
/// and one already Ben's.
struct Caseload {
    sam: bulkq_types::accounts::Account,
    ben: StaffUser,
    other: StaffUser,
    mine: Vec<Uuid>,
    unassigned: Vec<Uuid>,
    theirs: Vec<Uuid>,
    already: Vec<Uuid>,
}

async fn sams_caseload(db: &TestDatabase) -> Caseload {
    let sam = caseload::users::accounts::find_account(&db.conn, "sam")
        .await
        .unwrap();
    let ben = add_user(db, "ben", Role::Staff).await;
    let other = add_user(db, "ola", Role::Staff).await;
    Caseload {
        mine: insert_people(&db.conn, "Mine", 3, Some(sam.id)).await,
        unassigned: insert_people(&db.conn, "Free", 1, None).await,
        theirs: insert_people(&db.conn, "Theirs", 2, Some(other.id)).await,
        already: insert_people(&db.conn, "Bens", 1, Some(ben.id)).await,
        sam,
        ben,
        other,
    }
}

async fn staff_move_their_caseload_to_another_coach(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let Caseload {
        sam,
        ben,
        other,
        mine,
        unassigned,
        theirs,
        already,
    } = sams_caseload(&db).await;
    let cookie = sign_in(&bulk.app).await;

    let everyone: Vec<Uuid> = [&mine, &unassigned, &theirs, &already]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let reference = bulk
        .submit(
            PATH,
            json!({"ids": ids_json(&everyone), "to_coach": "ben"}),
            &cookie,
        )
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(task["summary"], "Move 7 people to ben", "{task}");
    let report = &task["report"];
    assert_eq!(
        (
            &report["changed"],
            &report["unchanged"],
            &report["forbidden"]
        ),
        (&json!(4), &json!(0), &json!(3)),
        "Sam's three and the unassigned one move; Ola's and Ben's are not Sam's: {task}"
    );

    let coach_of = async |id: Uuid| {
        person::Entity::find_by_id(id)
            .one(&db.conn)
            .await
            .unwrap()
            .unwrap()
            .coach_id
    };
    for id in mine.iter().chain(&unassigned) {
        assert_eq!(coach_of(*id).await, Some(ben.id));
    }
    for id in &theirs {
        assert_eq!(coach_of(*id).await, Some(other.id), "not Sam's to move");
    }
    assert_eq!(coach_of(already[0]).await, Some(ben.id));
    let moves = coach_changes_of(&db, &reference).await;
    assert_eq!(moves.len(), 4, "one row per person moved: {moves:?}");
    for change in &moves {
        assert_eq!(change.to_coach_id, ben.id);
        assert_eq!(change.changed_by, sam.id);
        let from = if unassigned.contains(&change.person_id) {
            None
        } else {
            Some(sam.id)
        };
        assert_eq!(change.from_coach_id, from, "{change:?}");
    }
    bulk.stop().await;
}

/// A saved query's batches are moved as the walk read them (on SQLite, not read again):
/// Sam's query reaches Sam's people and the unassigned one, each recorded from the coach
/// they had; an admin's same query then moves only those not already Ben's.
async fn a_saved_query_moves_the_people_its_walk_found(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = sams_caseload(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let everyone = json!({"query": {}, "to_coach": "ben"});

    let cookie = sign_in(&bulk.app).await;
    let reference = bulk.submit(PATH, everyone.clone(), &cookie).await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(
        (&task["report"]["changed"], &task["progress_total"]),
        (&json!(4), &json!(4)),
        "Sam's query reaches Sam's three and the unassigned one: {task}"
    );
    let moves = moves_of(&db, &reference).await;
    let from: Vec<(Uuid, Option<Uuid>)> = (people.mine.iter())
        .map(|id| (*id, Some(people.sam.id)))
        .chain(people.unassigned.iter().map(|id| (*id, None)))
        .collect();
    assert_eq!(moves, sorted(from));

    let admin = sign_in_as(&bulk.app, "ada").await;
    let reference = bulk.submit(PATH, everyone, &admin).await;
    let task = bulk.finished(&reference, &admin).await;
    assert_eq!(
        (&task["report"]["changed"], &task["report"]["unchanged"]),
        (&json!(2), &json!(5)),
        "only Ola's two were not Ben's yet: {task}"
    );
    let moves = moves_of(&db, &reference).await;
    assert_eq!(
        moves,
        sorted(
            (people.theirs.iter())
                .map(|id| (*id, Some(people.other.id)))
                .collect()
        )
    );
    let not_bens = person::Entity::find()
        .filter(person::Column::CoachId.ne(people.ben.id))
        .all(&db.conn)
        .await
        .unwrap();
    assert!(not_bens.is_empty(), "{not_bens:?}");
    bulk.stop().await;
}

/// Each person task `reference` moved, with the coach they were moved from, by id.
async fn moves_of(db: &TestDatabase, reference: &serde_json::Value) -> Vec<(Uuid, Option<Uuid>)> {
    let moves = coach_changes_of(db, reference).await;
    sorted(
        moves
            .into_iter()
            .map(|change| (change.person_id, change.from_coach_id))
            .collect(),
    )
}

/// The `coach_change` rows of task `reference`.
async fn coach_changes_of(
    db: &TestDatabase,
    reference: &serde_json::Value,
) -> Vec<coach_change::Model> {
    let task_id: Uuid = reference["id"].as_str().unwrap().parse().unwrap();
    coach_change::Entity::find()
        .filter(coach_change::Column::TaskId.eq(task_id))
        .all(&db.conn)
        .await
        .unwrap()
}

fn sorted(mut moves: Vec<(Uuid, Option<Uuid>)>) -> Vec<(Uuid, Option<Uuid>)> {
    moves.sort();
    moves
}

async fn a_coach_that_cannot_take_people_is_refused_by_field(db: TestDatabase) {
    add_user(&db, "gone", Role::Staff).await;
    // Taking the write lock at BEGIN: a deferred transaction that reads, then writes, is
    // refused at once on SQLite if the node committed in between.
    let txn = queue::database::begin_immediate(&db.conn).await.unwrap();
    caseload::users::accounts::set_disabled(&txn, &shell(), "gone", true)
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "Some", 2, None).await;
    let cookie = sign_in(&bulk.app).await;
    for (to_coach, problem) in [
        ("nobody", "no user is called"),
        ("gone", "disabled"),
        ("", "no user is called"),
    ] {
        let body = json!({"ids": ids_json(&people), "to_coach": to_coach});
        let (response, text) =
            send(&bulk.app, post_json(PATH, &body.to_string(), Some(&cookie))).await;
        assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
        let error: serde_json::Value = serde_json::from_str(&text).unwrap();
        let field = error["fields"]["to_coach"].as_str().unwrap_or_default();
        assert!(field.contains(problem), "{to_coach:?}: {text}");
    }
    let body = json!({"ids": ids_json(&people)});
    let (response, text) = send(&bulk.app, post_json(PATH, &body.to_string(), Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM queue_task").await,
        0,
        "nothing enqueued"
    );
    bulk.stop().await;
}

async fn a_batch_run_again_moves_nobody_twice(db: TestDatabase) {
    let admin = add_user(&db, "ada", Role::Admin).await;
    let ben = add_user(&db, "ben", Role::Staff).await;
    let people = insert_people(&db.conn, "Again", 5, None).await;
    let actor = Actor {
        id: admin.id,
        role: admin.role,
    };
    let task = Uuid::now_v7();
    let first = reassign(&db.conn, task, &actor, ben.id, &people, Utc::now())
        .await
        .unwrap();
    assert_eq!(first.changed.len(), 5);
    // Someone moves a person elsewhere meanwhile; the task's batch, run again, leaves them.
    let moved_meanwhile = people[0];
    let ola = add_user(&db, "ola", Role::Staff).await;
    person::Entity::update_many()
        .col_expr(person::Column::CoachId, Expr::value(ola.id))
        .filter(person::Column::Id.eq(moved_meanwhile))
        .exec(&db.conn)
        .await
        .unwrap();
    let again = reassign(&db.conn, task, &actor, ben.id, &people, Utc::now())
        .await
        .unwrap();
    assert_eq!(
        again.changed.len(),
        0,
        "every person was moved by this task before"
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM coach_change").await,
        5,
        "no second row"
    );
    let coach = person::Entity::find_by_id(moved_meanwhile)
        .one(&db.conn)
        .await
        .unwrap()
        .unwrap()
        .coach_id;
    assert_eq!(coach, Some(ola.id));
}
