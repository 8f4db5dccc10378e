//! The worst input we can think of, sent the way a careless or hostile client would: every
//! case must get a clear 4xx (or a task that fails with a message), never a panic, a dropped
//! connection, a stream that never ends or a dead node; and the node must answer the next
//! request as if nothing happened.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use axum::routing::get as route_get;
use bulkq_types::actions::ActionKind;
use caseload::testing::insert_people;
use caseload::users::Role;
use http_body_util::BodyExt;
use migration::{Migrator, MigratorTrait};
use queue::NewTask;
use queue::testing::{Backend, TestDatabase};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use server::api::stream_limit::STREAMS_PER_USER_DEFAULT;
use server::web::{self, WebOptions};
use tower::ServiceExt;
use uuid::Uuid;

use crate::bulk_actions::Bulk;
use crate::helpers::*;
use crate::nodes::{ScratchDir, kill};

queue::backend_tests!(Migrator =>
    hostile_bodies_are_refused_at_the_door_and_change_nothing,
    overflowing_page_numbers_answer_4xx_and_the_node_goes_on,
    a_saved_query_too_big_for_the_door_fails_its_task_not_the_node,
    live_updates_end_with_the_sign_in_and_are_few_per_user,
    every_answer_carries_the_security_headers,
    sign_in_attempts_are_limited_per_client_address,
);

/// How long a hostile request may take to be answered in full.
const ANSWER_LIMIT: Duration = Duration::from_secs(15);

/// `send`, but failing after [`ANSWER_LIMIT`]: a stream that never ends is a failure here.
async fn answer(app: &Router, request: Request<Body>) -> (axum::http::Response<()>, String) {
    let what = format!("{} {}", request.method(), request.uri());
    tokio::time::timeout(ANSWER_LIMIT, send(app, request))
        .await
        .unwrap_or_else(|_| panic!("{what}: no complete answer within {ANSWER_LIMIT:?}"))
}

/// `n` words of one letter: the saved query that once overflowed a worker's stack.
fn words(n: usize) -> String {
    vec!["a"; n].join(" ")
}

async fn hostile_bodies_are_refused_at_the_door_and_change_nothing(db: TestDatabase) {
    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    let person = insert_people(&db.conn, "x", 1, None).await[0].to_string();
    let huge_ids: Vec<String> = (0..80_000).map(|_| Uuid::now_v7().to_string()).collect();
    let cases: Vec<(&str, String, StatusCode, Option<&str>)> = vec![
        (
            "/api/1/caseload/exports",
            json!({"query": {"name": words(12_000)}, "row_cap": 1}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        (
            "/api/1/caseload/exports",
            json!({"query": {"contains": "x".repeat(100_000)}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"query": {"name": "a b c d e f g h i j"}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"query": {"program_status": "X".repeat(10_000)}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        // A misspelt target must not widen the action to everyone.
        (
            "/api/1/caseload/exports",
            json!({"idz": [person]}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("idz"),
        ),
        (
            "/api/1/caseload/unwatches",
            json!({"idz": [person]}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("idz"),
        ),
        (
            "/api/1/caseload/unwatches",
            json!({}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/exports",
            json!({"all": false}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"all": true, "ids": [person]}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/exports",
            json!({"query": {"nmae": "ada"}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        // NUL and other control characters, which PostgreSQL cannot store at all.
        (
            "/api/1/caseload/emails",
            json!({"ids": [person], "subject": "a\u{0}b", "body": "b"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("subject"),
        ),
        (
            "/api/1/caseload/emails",
            json!({"ids": [person], "subject": "s", "body": "b\u{0}"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("body"),
        ),
        (
            "/api/1/caseload/emails",
            json!({"ids": [person], "subject": "s", "body": "b", "cc": ["a\u{0}@example.org"]})
                .to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("cc"),
        ),
        (
            "/api/1/caseload/program-status-changes",
            json!({"ids": [person], "to_status": "ACTIVE\u{0}", "reason": "r"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("to_status"),
        ),
        (
            "/api/1/caseload/program-status-changes",
            json!({"ids": [person], "to_status": "ACTIVE", "reason": "r\u{0}"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("reason"),
        ),
        (
            "/api/1/caseload/coach-reassignments",
            json!({"ids": [person], "to_coach": "sam\u{0}"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("to_coach"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"query": {"name": "ada\u{1b}[2J"}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        // Bodies no parser should take on: nested beyond reason, or beyond the size limit.
        (
            "/api/1/caseload/watches",
            format!("{{\"deep\": {}", "[".repeat(100_000)),
            StatusCode::BAD_REQUEST,
            None,
        ),
        (
            "/api/1/caseload/watches",
            json!({ "ids": huge_ids }).to_string(),
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
        ),
    ];
    for (path, body, expected, field) in cases {
        let shown = &body[..body.len().min(80)];
        let (response, text) = answer(&app, post_json(path, &body, Some(&cookie))).await;
        assert_eq!(response.status(), expected, "{path} {shown}: {text}");
        let reply: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
        assert!(reply["error"].is_string(), "{text}");
        if let Some(field) = field {
            assert!(reply["fields"][field].is_string(), "{path} {shown}: {text}");
        }
    }
    assert_eq!(db.scalar("SELECT COUNT(*) FROM queue_task").await, 0);
    let (response, text) = answer(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
}

async fn overflowing_page_numbers_answer_4xx_and_the_node_goes_on(db: TestDatabase) {
    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    let long_owner = "a".repeat(161);
    let cases = [
        (
            "/api/1/tasks?before=9223372036854775808_00000000000000000000000000000000".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/api/1/tasks?before=-9223372036854775808_00000000000000000000000000000000".to_owned(),
            StatusCode::OK,
        ),
        (
            "/api/1/tasks?limit=18446744073709551616".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/api/1/tasks?limit=-1".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/api/1/tasks?created_from=9999-12-31&created_to=9999-12-31".to_owned(),
            StatusCode::OK,
        ),
        (
            "/api/1/tasks?created_to=10000-01-01".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "/api/1/tasks?id=%00".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            format!("/api/1/tasks?owner={long_owner}"),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        ("/api/1/tasks?offset=1".to_owned(), StatusCode::BAD_REQUEST),
        (
            "/api/1/tasks?status=DONE".to_owned(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (path, expected) in cases {
        let (response, text) = answer(&app, get(&path, Some(&cookie))).await;
        assert_eq!(response.status(), expected, "{path}: {text}");
    }
    let (response, text) = answer(
        &app,
        post_json(
            "/api/list_tasks",
            r#"{"query": {"limit": "18446744073709551615"}}"#,
            Some(&cookie),
        ),
    )
    .await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    let server_fns = [
        (
            "/api/search_caseload",
            "query[q]=&query[status]=&query[page]=18446744073709551615",
        ),
        (
            "/api/search_caseload",
            "query[q]=&query[status]=&query[page]=20001",
        ),
    ];
    for (path, form) in server_fns {
        let (response, text) = answer(&app, post_form(path, form, Some(&cookie))).await;
        assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    }
    // A page asked for by URL renders its error and ends.
    let (response, page) = answer(&app, get("/?page=18446744073709551615", Some(&cookie))).await;
    // 200 when the page's head was streamed before the search answered, else the 422.
    assert!(
        matches!(
            response.status(),
            StatusCode::OK | StatusCode::UNPROCESSABLE_ENTITY
        ),
        "{}: {page}",
        response.status()
    );
    assert!(page.contains("narrow the search"), "{page}");
    assert!(page.contains("</html>"), "{page}");
    let (response, text) = answer(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
}

async fn a_saved_query_too_big_for_the_door_fails_its_task_not_the_node(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let owner = add_user(&db, "hostile", Role::Staff).await;
    let cookie = sign_in_as(&bulk.app, "hostile").await;
    // Saved before the door checked them (or written by anything but the API): the
    // executors meet these only when the task runs.
    let specs = [
        (
            ActionKind::Export.component(),
            json!({"target": {"query": {"name": words(12_000)}}, "columns": ["id"], "row_cap": 1}),
        ),
        (
            ActionKind::ProgramStatusChange.component(),
            json!({
                "target": {"query": {"contains": "x".repeat(100_000)}},
                "change": {"to_status": "INACTIVE", "reason": "hostile"},
            }),
        ),
    ];
    for (component, spec) in specs {
        let mut txn = bulk.store.begin_queue().await.unwrap();
        let task = txn
            .enqueue(NewTask::new(component, spec, owner.id))
            .await
            .unwrap();
        txn.commit().await.unwrap();
        let reference =
            json!({"id": task.id, "links": {"self": format!("/api/1/tasks/{}", task.id)}});
        let view = bulk.finished(&reference, &cookie).await;
        assert_eq!(view["workflow_status"], "FAILURE", "{view}");
        assert_eq!(view["attempt"], 1, "failed at once, not retried: {view}");
        let row = bulk.store.task_get(task.id).await.unwrap().unwrap();
        let desc = row.workflow_status_desc.unwrap_or_default();
        assert!(desc.contains("at most"), "{component}: {desc}");
    }
    let (response, text) = answer(&bulk.app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
    bulk.stop().await;
}

/// Opens the task event stream; the response's body is the stream.
async fn open_stream(app: &Router, cookie: &str) -> axum::http::Response<Body> {
    let request = get("/api/1/task-events", Some(cookie));
    tokio::time::timeout(ANSWER_LIMIT, app.clone().oneshot(request))
        .await
        .expect("the stream opens")
        .unwrap()
}

async fn live_updates_end_with_the_sign_in_and_are_few_per_user(db: TestDatabase) {
    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    let stream = open_stream(&app, &cookie).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let (response, text) = answer(&app, post_form("/api/sign_out", "", Some(&cookie))).await;
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "{text}"
    );
    let mut body = stream.into_body();
    tokio::time::timeout(ANSWER_LIMIT, async {
        while let Some(frame) = body.frame().await {
            frame.expect("a frame of the stream");
        }
    })
    .await
    .expect("the stream ends soon after sign-out");

    let cookie = sign_in(&app).await;
    let mut open = Vec::new();
    for _ in 0..STREAMS_PER_USER_DEFAULT {
        let stream = open_stream(&app, &cookie).await;
        assert_eq!(stream.status(), StatusCode::OK);
        open.push(stream);
    }
    let refused = open_stream(&app, &cookie).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let text = refused.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&text).contains("streams"));
    open.pop();
    assert_eq!(
        open_stream(&app, &cookie).await.status(),
        StatusCode::OK,
        "a closed stream frees its slot"
    );
}

async fn every_answer_carries_the_security_headers(db: TestDatabase) {
    let app = app(&db).await;
    let (response, page) = answer(&app, get("/login", None)).await;
    assert_status(&response, &page, StatusCode::OK);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let policy = header("content-security-policy").expect("a page has a CSP");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("the CSP names the page's nonce");
    assert!(
        page.contains(&format!("nonce=\"{nonce}\"")),
        "the page's scripts carry the CSP's nonce"
    );
    assert_eq!(header("x-frame-options").as_deref(), Some("DENY"));
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
    assert_eq!(header("referrer-policy").as_deref(), Some("same-origin"));
    assert!(header("x-request-id").is_some());
    assert!(
        header("strict-transport-security").is_none(),
        "not without HTTPS"
    );

    let cookie = sign_in(&app).await;
    let (response, text) = answer(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
    let headers = response.headers();
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
    assert_eq!(
        headers[header::CONTENT_SECURITY_POLICY],
        "default-src 'none'; frame-ancestors 'none'"
    );

    let secure = router_with_options(
        &db,
        &WebOptions {
            secure_cookies: true,
            ..WebOptions::default()
        },
    );
    let (response, _) = answer(&secure, get("/healthz", None)).await;
    assert!(
        response
            .headers()
            .contains_key(header::STRICT_TRANSPORT_SECURITY)
    );
}

/// A sign-in form POST from `client`.
fn sign_in_from(client: SocketAddr, username: &str) -> Request<Body> {
    let form = format!("username={username}&password=wrong-password");
    let mut request = post_form("/api/sign_in", &form, None);
    request.extensions_mut().insert(ConnectInfo(client));
    request
}

async fn sign_in_attempts_are_limited_per_client_address(db: TestDatabase) {
    let app = app(&db).await;
    let client: SocketAddr = "192.0.2.1:40000".parse().unwrap();
    let mut refused_at = None;
    let started = std::time::Instant::now();
    for attempt in 0..40u32 {
        let (response, _) = answer(&app, sign_in_from(client, &format!("ghost{attempt}"))).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused_at = Some(attempt);
            break;
        }
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    // A burst of 30 per address, then one more per 2 s: a slow machine may earn one back
    // while it sends the burst.
    let earned = u32::try_from(started.elapsed().as_secs() / 2).unwrap_or(u32::MAX);
    let refused_at = refused_at.expect("attempts from one address are limited");
    assert!(
        (30..=30 + earned).contains(&refused_at),
        "a burst of 30 attempts per address, refused at {refused_at} after {:?}",
        started.elapsed()
    );
    let other: SocketAddr = "192.0.2.2:40000".parse().unwrap();
    let (response, _) = answer(&app, sign_in_from(other, "ghost")).await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "other clients go on"
    );
}

/// A handler with a bug.
async fn boom() -> &'static str {
    panic!("kaboom")
}

#[tokio::test]
async fn a_panicking_or_stuck_handler_answers_and_the_node_goes_on() {
    let routes: Router = Router::new()
        .route("/boom", route_get(boom))
        .route(
            "/stuck",
            route_get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        )
        .route("/fine", route_get(|| async { "fine" }));
    let app = web::with_guards(
        routes,
        &WebOptions {
            request_timeout: Duration::from_millis(300),
            ..WebOptions::default()
        },
    );
    for (path, expected) in [
        ("/boom", StatusCode::INTERNAL_SERVER_ERROR),
        ("/stuck", StatusCode::SERVICE_UNAVAILABLE),
        ("/fine", StatusCode::OK),
    ] {
        let (response, text) = answer(&app, get(path, None)).await;
        assert_eq!(response.status(), expected, "{path}: {text}");
        assert!(response.headers().contains_key("x-request-id"));
        if expected != StatusCode::OK {
            let reply: Value = serde_json::from_str(&text).expect("a JSON error body");
            assert!(reply["error"].is_string(), "{text}");
            assert!(!text.contains("kaboom"), "no internals leak: {text}");
        }
    }
}

/// The number `sql` counts, or 0 while its table does not exist yet.
async fn count_or_zero(db: &TestDatabase, sql: &str) -> i64 {
    let statement = Statement::from_string(db.conn.get_database_backend(), sql);
    match db.conn.query_one_raw(statement).await {
        Ok(Some(row)) => row.try_get_by_index::<i64>(0).unwrap_or(0),
        _ => 0,
    }
}

/// Three nodes started at the same moment on an empty database all migrate it (one at a
/// time) and come up.
async fn three_nodes_start_at_once_on_a_fresh_database(db: TestDatabase) {
    let scratch = ScratchDir::new();
    let mut nodes: Vec<_> = (0..3)
        .map(|n| scratch.start_node(&db.url, &format!("fresh-{n}"), &[]))
        .collect();
    let started = std::time::Instant::now();
    loop {
        for node in &mut nodes {
            if let Some(status) = node.try_wait().unwrap() {
                panic!("a node exited while starting: {status}");
            }
        }
        let up = count_or_zero(&db, "SELECT COUNT(DISTINCT system_id) FROM queue_node").await;
        if up == 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{up} of 3 nodes came up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let applied = count_or_zero(&db, "SELECT COUNT(*) FROM seaql_migrations").await;
    assert_eq!(applied as usize, Migrator::migrations().len());
    for node in &mut nodes {
        kill(node).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_start_at_once_on_a_fresh_sqlite_file() {
    let db = TestDatabase::create_unmigrated(Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    three_nodes_start_at_once_on_a_fresh_database(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_start_at_once_on_a_fresh_postgres_database() {
    if let Some(db) = TestDatabase::create_unmigrated(Backend::Postgres).await {
        three_nodes_start_at_once_on_a_fresh_database(db).await;
    }
}
