use axum::http::StatusCode;
use caseload::seed::{SeedOptions, seed_people};
use migration::Migrator;
use queue::testing::TestDatabase;
use serde_json::Value;

use crate::helpers::*;

queue::backend_tests!(Migrator => search_pages_through_the_caseload, anonymous_search_is_refused);

async fn search_pages_through_the_caseload(db: TestDatabase) {
    let app = app(&db).await;
    seed_people(
        &db.conn,
        &SeedOptions {
            people: 120,
            seed: 3,
            coaches: vec![],
        },
    )
    .await
    .unwrap();
    let cookie = sign_in(&app).await;

    let search = |form: &'static str| post_form("/api/search_caseload", form, Some(&cookie));
    let (response, body) = send(&app, search("query[q]=&query[status]=&query[page]=2")).await;
    assert_status(&response, &body, StatusCode::OK);
    let results: Value = serde_json::from_str(&body).unwrap();
    let page = &results["page"];
    assert_eq!(page["total"], 120);
    assert_eq!(page["page"], 2);
    assert_eq!(page["people"].as_array().unwrap().len(), 20);
    assert_eq!(results["filter"]["name"], Value::Null, "the filter it ran");

    let (response, body) = send(&app, search("query[q]=zzz&query[status]=&query[page]=0")).await;
    assert_status(&response, &body, StatusCode::OK);
    let results = serde_json::from_str::<Value>(&body).unwrap();
    assert_eq!(results["page"]["total"], 0);
    assert_eq!(results["filter"]["name"], "zzz");

    let long = format!("query[q]={}&query[status]=&query[page]=0", "a".repeat(201));
    let (response, body) = send(
        &app,
        post_form("/api/search_caseload", &long, Some(&cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);

    let (response, body) = send(&app, post_form("/api/program_statuses", "", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()[0]["code"],
        "ACTIVE"
    );
}

async fn anonymous_search_is_refused(db: TestDatabase) {
    let app = app(&db).await;
    let (response, body) = send(
        &app,
        post_form(
            "/api/search_caseload",
            "query[q]=&query[status]=&query[page]=0",
            None,
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
    assert!(body.contains("Unauthenticated"), "{body}");
}
