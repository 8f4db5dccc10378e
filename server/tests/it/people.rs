//! People brought in through the JSON API and kept in step: upserts keyed by school id that
//! change nothing the second time (and leave the planner counting the people created),
//! bad records that apply nothing, and retirement that keeps history.

use axum::http::StatusCode;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::{Value, json};

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    the_same_records_twice_change_nothing_the_second_time,
    bad_records_apply_nothing_and_are_named,
    retiring_keeps_people_and_their_history,
);

async fn post(app: &axum::Router, path: &str, body: Value, cookie: &str) -> (StatusCode, Value) {
    let (response, text) = send(app, post_json(path, &body.to_string(), Some(cookie))).await;
    (
        response.status(),
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn records() -> Value {
    json!({"people": [
        {"school_id": "S-1", "first_name": "Ada", "last_name": "Lovelace",
         "email": "ada@example.edu", "program_status": "ACTIVE", "coach": "sam"},
        {"school_id": "S-2", "first_name": "Alan", "last_name": "Turing",
         "program_status": "ACTIVE"},
        {"school_id": " S-3 ", "first_name": " Grace ", "last_name": "Hopper",
         "email": "", "program_status": "GRADUATED", "coach": ""},
    ]})
}

async fn the_same_records_twice_change_nothing_the_second_time(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&app, "ada").await;
    let (status, reply) = post(&app, "/api/1/people", records(), &admin).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        reply["counts"],
        json!({"created": 3, "changed": 0, "unchanged": 0, "retired": 0})
    );
    assert_eq!(reply["outcomes"], json!(["created", "created", "created"]));
    assert_eq!(
        people_the_planner_counts(&db).await,
        3,
        "people created into an empty caseload are planned by their number"
    );
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM person p JOIN staff_user u ON u.id = p.coach_id \
                   WHERE p.school_id = 'S-1' AND u.username = 'sam'"
        )
        .await,
        1
    );
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM person WHERE school_id = 'S-3' AND first_name = 'Grace' \
                   AND email IS NULL AND coach_id IS NULL"
        )
        .await,
        1,
        "values are trimmed; empty means none"
    );

    let (status, reply) = post(&app, "/api/1/people", records(), &admin).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        reply["counts"],
        json!({"created": 0, "changed": 0, "unchanged": 3, "retired": 0})
    );

    let mut moved = records();
    moved["people"][1]["program_status"] = json!("INACTIVE");
    moved["people"][2]["last_name"] = json!("Hopper-Murray");
    let (_, reply) = post(&app, "/api/1/people", moved, &admin).await;
    assert_eq!(
        reply["outcomes"],
        json!(["unchanged", "changed", "changed"])
    );
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM program_status_change WHERE from_status = 'ACTIVE' \
                   AND to_status = 'INACTIVE' AND reason LIKE 'kept in step%'"
        )
        .await,
        1,
        "a status moved by the records is in the person's history"
    );

    // Staff may not load people.
    let sam = sign_in(&app).await;
    let (status, _) = post(&app, "/api/1/people", records(), &sam).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

async fn bad_records_apply_nothing_and_are_named(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&app, "ada").await;
    let bad = json!({"people": [
        {"school_id": "S-1", "first_name": "Ada", "last_name": "L", "program_status": "ACTIVE"},
        {"school_id": "S-1", "first_name": "Again", "last_name": "L", "program_status": "ACTIVE"},
        {"school_id": "S-2", "first_name": "=cmd|'/c calc'!A1", "last_name": "L", "program_status": "ACTIVE"},
        {"school_id": "S-3", "first_name": "B", "last_name": "L", "program_status": "ON_MARS"},
        {"school_id": "S-4", "first_name": "C", "last_name": "L", "program_status": "ACTIVE", "coach": "nobody"},
        {"school_id": "S-5", "first_name": "D", "last_name": "L", "program_status": "ACTIVE", "email": "not-mail"},
    ]});
    let (status, reply) = post(&app, "/api/1/people", bad, &admin).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    let fields = reply["fields"].as_object().unwrap();
    for field in [
        "people[1].school_id",
        "people[2].first_name",
        "people[3].program_status",
        "people[4].coach",
        "people[5].email",
    ] {
        assert!(fields.contains_key(field), "{field} in {reply}");
    }
    assert_eq!(fields.len(), 5, "{reply}");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person").await,
        0,
        "nothing applied"
    );

    for (body, field) in [
        (json!({"people": []}), "people"),
        (json!({"people": [{"school_id": "x"}]}), ""),
        (json!({"people": [], "extra": 1}), ""),
    ] {
        let (status, reply) = post(&app, "/api/1/people", body, &admin).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
        if !field.is_empty() {
            assert!(reply["fields"][field].is_string(), "{reply}");
        }
    }
    let too_many: Vec<Value> = (0..5_001)
        .map(|n| json!({"school_id": n.to_string(), "first_name": "a", "last_name": "b", "program_status": "ACTIVE"}))
        .collect();
    let (status, reply) = post(&app, "/api/1/people", json!({"people": too_many}), &admin).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
}

async fn retiring_keeps_people_and_their_history(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&app, "ada").await;
    post(&app, "/api/1/people", records(), &admin).await;
    let retire = json!({"school_ids": ["S-1", "S-2", "S-404"]});
    let (status, reply) = post(&app, "/api/1/people/retire", retire.clone(), &admin).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["counts"]["retired"], 2);
    assert_eq!(reply["unknown"], json!(["S-404"]));
    let (_, reply) = post(&app, "/api/1/people/retire", retire, &admin).await;
    assert_eq!(reply["counts"]["retired"], 0);
    assert_eq!(reply["counts"]["unchanged"], 2);
    let hostile = json!({"school_ids": ["ok", "nul\u{0}", "=1+1", ""]});
    let (status, reply) = post(&app, "/api/1/people/retire", hostile, &admin).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reply}");
    for field in ["school_ids[1]", "school_ids[2]", "school_ids[3]"] {
        assert!(reply["fields"][field].is_string(), "{field}: {reply}");
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person").await,
        3,
        "nobody deleted"
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM program_status_change WHERE to_status = 'RETIRED'")
            .await,
        2
    );
    // Back in the records, back in their status.
    let (_, reply) = post(&app, "/api/1/people", records(), &admin).await;
    assert_eq!(
        reply["outcomes"],
        json!(["changed", "changed", "unchanged"])
    );
}
