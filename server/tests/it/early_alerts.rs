//! Early alerts through the JSON API: staff raise an alert for the people of their caseload
//! (never someone else's), once per person per task; each coach with an address on file is
//! told once, listing their people; a coach whose people were all refused is told nothing;
//! open alerts show in the caseload search and its "has open alerts" filter, and close;
//! admins manage the reasons.

use axum::http::StatusCode;
use bulkq_types::alerts::AlertContent;
use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use caseload::access::Actor;
use caseload::coach_notices::{News, claim, fail_interrupted, messages};
use caseload::coach_reassignment::reassign;
use caseload::early_alerts::raise;
use caseload::testing::insert_people;
use caseload::users::Role;
use caseload::users::accounts::set_email;
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::json;
use uuid::Uuid;

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    alerts_are_raised_within_scope_and_each_coach_is_told_once,
    bad_alerts_are_refused_by_field,
    a_batch_run_again_raises_nobody_twice,
    a_notice_cut_off_mid_send_is_never_sent_again,
    a_long_notice_lists_the_first_people_still_coached,
    admins_manage_the_reasons,
);

const PATH: &str = "/api/1/caseload/early-alerts";

async fn alerts_are_raised_within_scope_and_each_coach_is_told_once(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let sam = caseload::users::accounts::find_account(&db.conn, "sam")
        .await
        .unwrap();
    let other = add_user(&db, "ola", Role::Staff).await;
    let txn = queue::database::begin_immediate(&db.conn).await.unwrap();
    set_email(&txn, &shell(), "sam", Some("sam@example.edu"))
        .await
        .unwrap();
    set_email(&txn, &shell(), "ola", Some("ola@example.edu"))
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let mine = insert_people(&db.conn, "Mine", 3, Some(sam.id)).await;
    let unassigned = insert_people(&db.conn, "Free", 1, None).await;
    let theirs = insert_people(&db.conn, "Theirs", 2, Some(other.id)).await;
    let cookie = sign_in(&bulk.app).await;

    let everyone: Vec<Uuid> = [&mine, &unassigned, &theirs]
        .into_iter()
        .flatten()
        .copied()
        .collect();
    let reference = bulk
        .submit(
            PATH,
            json!({
                "ids": ids_json(&everyone),
                "course": "MATH 101, fall term",
                "reasons": ["MISSING_ASSIGNMENTS", "LOW_GRADES"],
                "suggestion": "Book a tutoring slot",
            }),
            &cookie,
        )
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(
        task["summary"], "Raise an early alert for 6 people: 'Missing assignments, Low grades'",
        "{task}"
    );
    let report = &task["report"];
    assert_eq!(
        (&report["changed"], &report["forbidden"]),
        (&json!(4), &json!(2)),
        "Sam's three and the unassigned one; Ola's are not Sam's: {task}"
    );
    assert_eq!(
        (&report["coaches_told"], &report["coaches_not_told"]),
        (&json!(1), &json!(0)),
        "Sam is told; the unassigned person has no coach; Ola's people all refused: {task}"
    );
    let received = bulk.smtp.received();
    assert_eq!(received.len(), 1, "one message: {received:?}");
    assert_eq!(received[0].recipients, ["sam@example.edu"]);
    let data = &received[0].data;
    assert!(
        data.contains("Subject: Early alerts for 3 people you coach"),
        "{data}"
    );
    assert!(data.contains("MATH 101, fall term"), "{data}");
    assert!(data.contains("Mine"), "{data}");
    assert!(!data.contains("Free"), "not Sam's person: {data}");

    // The caseload shows the open alerts, and filters by them.
    let alerted = PersonFilter {
        has_open_alerts: true,
        ..PersonFilter::default()
    };
    let page = PageRequest {
        page: 0,
        page_size: 50,
    };
    let found = caseload::search::search_people(&db.conn, &alerted, page)
        .await
        .unwrap();
    assert_eq!(found.total, 4, "{found:?}");
    assert!(found.people.iter().all(|p| p.open_alerts == 1), "{found:?}");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM early_alert").await,
        4,
        "one alert per person raised"
    );

    // A person's alerts, and closing one (twice changes nothing; not Sam's: 404).
    let path = format!("/api/1/people/{}/early-alerts", mine[0]);
    let (response, text) = send(&bulk.app, get(&path, Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
    let alerts: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        alerts[0]["reason_names"],
        json!(["Missing assignments", "Low grades"])
    );
    let alert_id = alerts[0]["id"].as_str().unwrap().to_owned();
    let close = format!("/api/1/early-alerts/{alert_id}/close");
    for _ in 0..2 {
        let (response, text) = send(&bulk.app, post_json(&close, "{}", Some(&cookie))).await;
        assert_status(&response, &text, StatusCode::OK);
        assert!(text.contains("closed_at\":\""), "{text}");
    }
    let found = caseload::search::search_people(&db.conn, &alerted, page)
        .await
        .unwrap();
    assert_eq!(
        found.total, 3,
        "the closed one has no open alert: {found:?}"
    );
    let unknown = format!("/api/1/early-alerts/{}/close", Uuid::now_v7());
    let (response, text) = send(&bulk.app, post_json(&unknown, "{}", Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::NOT_FOUND);
    bulk.stop().await;
}

async fn bad_alerts_are_refused_by_field(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "Some", 2, None).await;
    let cookie = sign_in(&bulk.app).await;
    for (body, field) in [
        (json!({"course": "", "reasons": ["LOW_GRADES"]}), "course"),
        (json!({"course": "X", "reasons": []}), "reasons"),
        (json!({"course": "X", "reasons": ["NO_SUCH"]}), "reasons"),
        (json!({"course": "X", "reasons": ["low grades"]}), "reasons"),
        (
            json!({"course": "X", "reasons": ["LOW_GRADES"], "comment": "a\u{0}b"}),
            "comment",
        ),
        (
            json!({"course": "X\nY", "reasons": ["LOW_GRADES"], "idz": 1}),
            "course",
        ),
    ] {
        let mut body = body;
        body["ids"] = ids_json(&people);
        let (response, text) =
            send(&bulk.app, post_json(PATH, &body.to_string(), Some(&cookie))).await;
        assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
        let error: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(error["fields"][field].is_string(), "{body}: {text}");
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM queue_task").await,
        0,
        "nothing enqueued"
    );
    bulk.stop().await;
}

async fn a_batch_run_again_raises_nobody_twice(db: TestDatabase) {
    let admin = add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "Again", 5, None).await;
    let actor = Actor {
        id: admin.id,
        role: Role::Admin,
    };
    let content = AlertContent {
        course: "BIO 200".into(),
        reasons: vec!["POOR_ATTENDANCE".into()],
        ..AlertContent::default()
    };
    let task = Uuid::now_v7();
    let first = raise(&db.conn, task, &actor, &content, &people, Utc::now())
        .await
        .unwrap();
    let again = raise(&db.conn, task, &actor, &content, &people, Utc::now())
        .await
        .unwrap();
    assert_eq!((first.changed.len(), again.changed.len()), (5, 0));
    assert_eq!(again.unchanged.len(), 5);
    let other_task = raise(
        &db.conn,
        Uuid::now_v7(),
        &actor,
        &content,
        &people[..1],
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(
        other_task.changed.len(),
        1,
        "another task raises its own alert"
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM early_alert").await, 6);
}

/// An attempt that died between claiming a coach's notice and recording it may have sent
/// it: the next attempt marks it failed and claims nobody again.
async fn a_notice_cut_off_mid_send_is_never_sent_again(db: TestDatabase) {
    let coach = add_user(&db, "cody", Role::Staff).await;
    let people = insert_people(&db.conn, "Coached", 3, Some(coach.id)).await;
    let (task, _) = alert_as_admin(&db, &people).await;
    let started = Utc::now();
    let claimed = claim(&db.conn, task, News::EarlyAlerts, started, Utc::now())
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].id, coach.id);
    assert_eq!(claimed[0].address, None, "no address on file");
    // The attempt dies here. The next one:
    let later = Utc::now();
    assert_eq!(fail_interrupted(&db.conn, task, later).await.unwrap(), 1);
    let again = claim(&db.conn, task, News::EarlyAlerts, later, Utc::now())
        .await
        .unwrap();
    assert!(again.is_empty(), "claimed once, never again: {again:?}");
    let messages = messages(
        &db.conn,
        task,
        News::EarlyAlerts,
        &[coach.id],
        "Course: HIST 110",
    )
    .await
    .unwrap();
    let message = &messages[0];
    assert_eq!(message.subject, "Early alerts for 3 people you coach");
    assert!(message.body.contains("- Coached"), "{}", message.body);
}

/// A coach told of more people than are sorted whole gets the first 100 by name among the
/// people they coach now, and the count of all of them.
async fn a_long_notice_lists_the_first_people_still_coached(db: TestDatabase) {
    let coach = add_user(&db, "cody", Role::Staff).await;
    let other = add_user(&db, "olga", Role::Staff).await;
    let people = insert_people(&db.conn, "Many", 2_050, Some(coach.id)).await;
    let (task, actor) = alert_as_admin(&db, &people).await;
    // The first by name moves to another coach after the alert.
    reassign(
        &db.conn,
        Uuid::now_v7(),
        &actor,
        other.id,
        &people[..1],
        Utc::now(),
    )
    .await
    .unwrap();
    let messages = messages(&db.conn, task, News::EarlyAlerts, &[coach.id], "")
        .await
        .unwrap();
    let body = &messages[0].body;
    assert_eq!(
        messages[0].subject,
        "Early alerts for 2,050 people you coach"
    );
    let listed: Vec<&str> = body
        .lines()
        .filter(|line| line.starts_with("- Many"))
        .collect();
    assert_eq!(listed.len(), 100, "{body}");
    // School ids sort as their names do: First1, First10, First100, First1000, …
    assert_eq!(listed[0], "- ManyLast, First1 (Many-1)", "{body}");
    assert_eq!(listed[1], "- ManyLast, First10 (Many-10)", "{body}");
    assert!(
        !body.contains("(Many-0)"),
        "moved away, so not listed: {body}"
    );
    assert!(body.contains("- and 1,950 people more"), "{body}");
}

/// Raises an alert for `people` as a new admin, "ada"; returns the task and the admin.
async fn alert_as_admin(db: &TestDatabase, people: &[Uuid]) -> (Uuid, Actor) {
    let admin = add_user(db, "ada", Role::Admin).await;
    let actor = Actor {
        id: admin.id,
        role: Role::Admin,
    };
    let content = AlertContent {
        course: "HIST 110".into(),
        reasons: vec!["NOT_ENGAGED".into()],
        ..AlertContent::default()
    };
    let task = Uuid::now_v7();
    raise(&db.conn, task, &actor, &content, people, Utc::now())
        .await
        .unwrap();
    (task, actor)
}

async fn admins_manage_the_reasons(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let staff = sign_in(&bulk.app).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&bulk.app, "ada").await;
    let body = json!({"name": "Late work"}).to_string();
    let (response, text) = send(
        &bulk.app,
        post_json("/api/1/alert-reasons", &body, Some(&staff)),
    )
    .await;
    assert_status(&response, &text, StatusCode::FORBIDDEN);
    let (response, text) = send(
        &bulk.app,
        post_json("/api/1/alert-reasons", &body, Some(&admin)),
    )
    .await;
    assert_status(&response, &text, StatusCode::CREATED);
    assert!(text.contains("\"code\":\"LATE_WORK\""), "{text}");
    let (response, text) = send(
        &bulk.app,
        post_json("/api/1/alert-reasons", &body, Some(&admin)),
    )
    .await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);

    let retire = "/api/1/alert-reasons/LATE_WORK/retire";
    let (response, text) = send(&bulk.app, post_json(retire, "{}", Some(&admin))).await;
    assert_status(&response, &text, StatusCode::NO_CONTENT);
    let (response, text) = send(&bulk.app, post_json(retire, "{}", Some(&admin))).await;
    assert_status(&response, &text, StatusCode::NOT_FOUND);
    let odd = "/api/1/alert-reasons/%00x/retire";
    let (response, text) = send(&bulk.app, post_json(odd, "{}", Some(&admin))).await;
    assert_status(&response, &text, StatusCode::NOT_FOUND);

    let (response, text) = send(&bulk.app, get("/api/1/alert-reasons", Some(&staff))).await;
    assert_status(&response, &text, StatusCode::OK);
    assert!(
        !text.contains("LATE_WORK"),
        "retired reasons are not offered: {text}"
    );
    let (response, text) = send(
        &bulk.app,
        get("/api/1/alert-reasons?retired=true", Some(&staff)),
    )
    .await;
    assert_status(&response, &text, StatusCode::OK);
    assert!(
        text.contains("\"code\":\"LATE_WORK\",\"name\":\"Late work\",\"retired\":true"),
        "{text}"
    );

    // A retired reason cannot be given.
    let people = insert_people(&db.conn, "Some", 1, None).await;
    let body = json!({"ids": ids_json(&people), "course": "X", "reasons": ["LATE_WORK"]});
    let (response, text) = send(&bulk.app, post_json(PATH, &body.to_string(), Some(&staff))).await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    bulk.stop().await;
}
