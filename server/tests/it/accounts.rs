//! Staff accounts and sign-in as an organisation runs them: sign-out that stays signed out,
//! sign-in limits strangers cannot turn against a user, disabled accounts, one-time
//! passwords, roles that reach open streams, and personal API tokens.

use std::net::SocketAddr;
use std::time::Duration;

use app::api::session_store::DatabaseSessionStore;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use caseload::users::Role;
use http_body_util::BodyExt;
use migration::Migrator;
use queue::testing::TestDatabase;
use server::web::WebOptions;
use tower::ServiceExt;
use tower_sessions::SessionStore;
use tower_sessions::session::Id;

use serde_json::json;
use uuid::Uuid;

use crate::bulk_actions::Bulk;
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    a_request_in_flight_cannot_undo_a_sign_out,
    strangers_wrong_passwords_never_refuse_a_known_device,
    disabling_ends_sessions_tokens_and_tasks_and_spares_the_last_admin,
    a_reset_password_must_be_changed_before_anything_else,
    a_role_change_reaches_an_open_stream,
    tokens_act_for_their_user_on_the_json_api_only,
);

/// How long a stream may take to notice a change (it checks every 2 s).
const STREAM_NOTICES_WITHIN: Duration = Duration::from_secs(15);

fn ok_or_redirect(response: &axum::http::Response<()>, body: &str) {
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "{} {body}",
        response.status()
    );
}

/// A request as a browser with these cookies would send it (`None`: no cookie).
fn with_cookies(mut request: Request<Body>, cookies: &[&str]) -> Request<Body> {
    if !cookies.is_empty() {
        request
            .headers_mut()
            .insert(header::COOKIE, cookies.join("; ").parse().unwrap());
    }
    request
}

async fn a_request_in_flight_cannot_undo_a_sign_out(db: TestDatabase) {
    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    let id: Id = cookie.trim_start_matches("bulkq_session=").parse().unwrap();
    let store = DatabaseSessionStore::new(queue::Store::new(db.conn.clone()));
    // A request loaded the session, the user signs out meanwhile, then the request ends
    // and saves what it loaded (its renewed expiry).
    let mut in_flight = store
        .load(&id)
        .await
        .unwrap()
        .expect("the session is stored");
    let (response, body) = send(&app, post_form("/api/sign_out", "", Some(&cookie))).await;
    ok_or_redirect(&response, &body);
    in_flight.expiry_date += time::Duration::hours(1);
    store.save(&in_flight).await.unwrap();
    assert!(store.load(&id).await.unwrap().is_none());
    let (response, body) = send(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
}

/// A router that believes `X-Forwarded-For`, as behind the organisation's proxy.
fn behind_a_proxy(db: &TestDatabase) -> Router {
    router_with_options(
        db,
        &WebOptions {
            trust_forwarded_for: true,
            ..WebOptions::default()
        },
    )
}

fn sign_in_request(address: &str, username: &str, password: &str) -> Request<Body> {
    let form = format!("username={username}&password={password}");
    let mut request = post_form("/api/sign_in", &form, None);
    request
        .headers_mut()
        .insert("x-forwarded-for", address.parse().unwrap());
    let proxy: SocketAddr = "10.0.0.1:50000".parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(proxy));
    request
}

/// The `name=value` of every cookie a response sets.
fn set_cookies(response: &axum::http::Response<()>) -> Vec<String> {
    response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().to_owned())
        .collect()
}

async fn strangers_wrong_passwords_never_refuse_a_known_device(db: TestDatabase) {
    add_user(&db, "sam", Role::Staff).await;
    let app = behind_a_proxy(&db);
    // Sam signs in at their desk once: the browser keeps a known-device cookie.
    let (response, body) = send(&app, sign_in_request("192.0.2.10", "sam", PASSWORD)).await;
    ok_or_redirect(&response, &body);
    let device = set_cookies(&response)
        .into_iter()
        .find(|cookie| cookie.starts_with("bulkq_device_"))
        .expect("a sign-in sets a known-device cookie");

    // Eight wrong passwords from eight other addresses do not refuse Sam anywhere.
    for n in 0..8 {
        let (response, _) = send(
            &app,
            sign_in_request(&format!("198.51.100.{n}"), "sam", "nope"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let (response, body) = send(&app, sign_in_request("192.0.2.10", "sam", PASSWORD)).await;
    ok_or_redirect(&response, &body);

    // Keep going from many addresses: now unknown browsers wait, Sam's own does not.
    for n in 8..14 {
        send(
            &app,
            sign_in_request(&format!("198.51.100.{n}"), "sam", "nope"),
        )
        .await;
    }
    let (response, body) = send(&app, sign_in_request("203.0.113.5", "sam", PASSWORD)).await;
    assert_status(&response, &body, StatusCode::TOO_MANY_REQUESTS);
    let known = with_cookies(sign_in_request("203.0.113.5", "sam", PASSWORD), &[&device]);
    let (response, body) = send(&app, known).await;
    ok_or_redirect(&response, &body);
    // A forged or borrowed cookie proves nothing.
    let flipped = if device.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{flipped}", &device[..device.len() - 1]);
    let forged = with_cookies(sign_in_request("203.0.113.6", "sam", PASSWORD), &[&forged]);
    assert_eq!(
        send(&app, forged).await.0.status(),
        StatusCode::TOO_MANY_REQUESTS
    );

    // The limits are rows in the database: another node sees them.
    let other_node = behind_a_proxy(&db);
    let (response, _) = send(&other_node, sign_in_request("203.0.113.7", "sam", PASSWORD)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    // Successful sign-ins count nothing: the device's own limit is untouched.
    for _ in 0..6 {
        let known = with_cookies(sign_in_request("192.0.2.10", "sam", PASSWORD), &[&device]);
        let (response, body) = send(&other_node, known).await;
        ok_or_redirect(&response, &body);
    }
}

async fn disabling_ends_sessions_tokens_and_tasks_and_spares_the_last_admin(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let app = &bulk.app;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(app, "ada").await;
    let sam = sign_in(app).await;
    let token = make_token(app, &sam, true).await;
    // Sam's task waits for its time.
    let people = caseload::testing::insert_people(&db.conn, "dis", 1, None).await;
    let run_at = chrono::Utc::now() + chrono::Duration::seconds(2);
    let waiting = bulk
        .submit(
            "/api/1/caseload/watches",
            json!({"ids": [people[0].to_string()], "run_at": run_at.to_rfc3339()}),
            &sam,
        )
        .await;

    let (response, body) = send(
        app,
        post_form(
            "/api/users/disable",
            "username=sam&disabled=true",
            Some(&admin),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(body.contains("\"disabled_at\":\"20"), "{body}");
    for request in [
        get("/api/1/tasks", Some(&sam)),
        bearer(get("/api/1/tasks", None), &token),
    ] {
        let (response, body) = send(app, request).await;
        assert_status(&response, &body, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM web_session").await,
        1,
        "only ada's"
    );
    let form = format!("username=sam&password={PASSWORD}");
    let (response, _) = send(app, post_form("/api/sign_in", &form, None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // The waiting task ends without doing anything, saying why, for an admin to see.
    let view = bulk.finished(&waiting, &admin).await;
    assert_eq!(view["workflow_status"], "FAILURE", "{view}");
    let id: Uuid = waiting["id"].as_str().unwrap().parse().unwrap();
    let task = bulk.store.task_get(id).await.unwrap().unwrap();
    let reason = task.workflow_status_desc.unwrap_or_default();
    assert!(reason.contains("disabled"), "{reason}");

    // Ada is the only enabled admin: she can be neither disabled nor demoted.
    for (path, form) in [
        ("/api/users/disable", "username=ada&disabled=true"),
        ("/api/users/role", "username=ada&role=staff"),
    ] {
        let (response, body) = send(app, post_form(path, form, Some(&admin))).await;
        assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(body.contains("last enabled admin"), "{body}");
    }
    // Only admins manage accounts.
    let lee = add_user(&db, "lee", Role::Staff).await;
    let lee_cookie = sign_in_as(app, &lee.username).await;
    let (response, body) = send(app, post_form("/api/users", "", Some(&lee_cookie))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(
        app,
        post_form(
            "/api/users/disable",
            "username=sam&disabled=false",
            Some(&admin),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let (response, body) = send(app, post_form("/api/sign_in", &form, None)).await;
    ok_or_redirect(&response, &body);
}

async fn a_reset_password_must_be_changed_before_anything_else(db: TestDatabase) {
    let app = app(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&app, "ada").await;
    let old = sign_in(&app).await;
    let (response, body) = send(
        &app,
        post_form("/api/users/reset_password", "username=sam", Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    let one_time = reply["password"].as_str().unwrap().to_owned();
    let (response, _) = send(&app, get("/api/1/tasks", Some(&old))).await;
    assert_eq!(
        response.status(),
        StatusCode::UNAUTHORIZED,
        "the reset ended sam's session"
    );

    let form = format!("username=sam&password={one_time}");
    let (response, body) = send(&app, post_form("/api/sign_in", &form, None)).await;
    ok_or_redirect(&response, &body);
    let cookie = session_cookie(&response).unwrap();
    let (response, _) = send(&app, get("/", Some(&cookie))).await;
    assert_eq!(response.headers()[header::LOCATION], "/account");
    let (response, body) = send(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    assert!(body.contains("new password"), "{body}");

    // The policy holds: length, not the most common passwords, and a real change.
    for (new, problem) in [
        ("short", "at least 15"),
        ("password1234567890", "common"),
        (one_time.as_str(), "differ"),
    ] {
        let form = format!("current={one_time}&new={new}");
        let (response, body) = send(
            &app,
            post_form("/api/account/password", &form, Some(&cookie)),
        )
        .await;
        assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(body.contains(problem), "{new}: {body}");
    }
    let form = format!("current={one_time}&new=a+long+and+fresh+passphrase");
    let (response, body) = send(
        &app,
        post_form("/api/account/password", &form, Some(&cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let (response, body) = send(&app, get("/", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    let (response, body) = send(&app, get("/api/1/tasks", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
}

async fn a_role_change_reaches_an_open_stream(db: TestDatabase) {
    let store = queue::Store::new(db.conn.clone());
    let app = app_with_store(&db, store.clone()).await;
    add_user(&db, "ada", Role::Admin).await;
    let lee = add_user(&db, "lee", Role::Staff).await;
    let admin = sign_in_as(&app, "ada").await;
    let sam = sign_in(&app).await;
    let stream = app
        .clone()
        .oneshot(get("/api/1/task-events", Some(&sam)))
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut body = stream.into_body();

    let (response, body_text) = send(
        &app,
        post_form("/api/users/role", "username=sam&role=admin", Some(&admin)),
    )
    .await;
    assert_status(&response, &body_text, StatusCode::OK);
    // Lee's tasks now reach Sam's stream, once it has checked (every 2 s): keep enqueueing
    // until one arrives.
    let seen = tokio::time::timeout(STREAM_NOTICES_WITHIN, async {
        loop {
            let mut txn = store.begin_queue().await.unwrap();
            txn.enqueue(queue::NewTask::new("test.noop", json!({}), lee.id))
                .await
                .unwrap();
            txn.commit().await.unwrap();
            let frame = tokio::time::timeout(Duration::from_millis(500), body.frame()).await;
            if let Ok(Some(Ok(frame))) = frame
                && frame
                    .data_ref()
                    .is_some_and(|data| String::from_utf8_lossy(data).contains("event: task"))
            {
                return;
            }
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "the stream of a user made admin shows others' tasks"
    );

    // Disabled, the stream ends.
    send(
        &app,
        post_form(
            "/api/users/disable",
            "username=sam&disabled=true",
            Some(&admin),
        ),
    )
    .await;
    tokio::time::timeout(STREAM_NOTICES_WITHIN, async {
        while let Some(frame) = body.frame().await {
            frame.expect("a frame of the stream");
        }
    })
    .await
    .expect("the stream of a disabled user ends");
}

/// Adds `Authorization: Bearer <token>`.
fn bearer(mut request: Request<Body>, token: &str) -> Request<Body> {
    request.headers_mut().insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    request
}

/// Makes a token on the user's own account page and returns its secret.
async fn make_token(app: &Router, cookie: &str, can_act: bool) -> String {
    let form = format!("name=script&can_act={can_act}&expires_in_days=30");
    let (response, body) = send(
        app,
        post_form("/api/account/tokens/create", &form, Some(cookie)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    reply["secret"].as_str().unwrap().to_owned()
}

async fn tokens_act_for_their_user_on_the_json_api_only(db: TestDatabase) {
    let app = app(&db).await;
    let sam = sign_in(&app).await;
    let reader = make_token(&app, &sam, false).await;
    let actor = make_token(&app, &sam, true).await;
    assert!(actor.starts_with("bq_"));
    let (_, listed) = send(&app, post_form("/api/account/tokens", "", Some(&sam))).await;
    assert!(
        !listed.contains(&actor),
        "the secret is shown once, never listed"
    );
    assert_eq!(listed.matches("\"name\":\"script\"").count(), 2, "{listed}");

    let (response, body) = send(&app, bearer(get("/api/1/tasks", None), &reader)).await;
    assert_status(&response, &body, StatusCode::OK);
    let export = r#"{"all": true, "columns": ["school_id"]}"#;
    let (response, body) = send(
        &app,
        bearer(post_json("/api/1/caseload/exports", export, None), &reader),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    // A token needs no CSRF proof, even with a browser's cross-site header.
    let mut act = bearer(post_json("/api/1/caseload/exports", export, None), &actor);
    act.headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    let (response, body) = send(&app, act).await;
    assert_status(&response, &body, StatusCode::ACCEPTED);
    // Recorded as the user's own task.
    let (_, tasks) = send(&app, get("/api/1/tasks", Some(&sam))).await;
    assert!(tasks.contains("caseload.export"), "{tasks}");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM api_token WHERE last_used_at IS NOT NULL")
            .await,
        2
    );

    // Nowhere but /api/1: the dashboard's server functions ignore it.
    let (response, body) = send(
        &app,
        bearer(post_form("/api/current_user", "", None), &actor),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(body, "null");
    // Junk and revoked tokens are no one.
    for junk in [
        "bq_nope",
        "",
        "bq_0000000000000000000000000000000000000000000000000000000000000000",
    ] {
        let (response, _) = send(&app, bearer(get("/api/1/tasks", None), junk)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{junk}");
    }
    let (_, listed) = send(&app, post_form("/api/account/tokens", "", Some(&sam))).await;
    let tokens: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    for token in &tokens {
        let form = format!("id={}", token["id"].as_str().unwrap());
        let (response, body) = send(
            &app,
            post_form("/api/account/tokens/revoke", &form, Some(&sam)),
        )
        .await;
        assert_status(&response, &body, StatusCode::OK);
    }
    let (response, _) = send(&app, bearer(get("/api/1/tasks", None), &actor)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (response, body) = send(
        &app,
        post_form(
            "/api/account/tokens/revoke",
            &format!("id={}", tokens[0]["id"].as_str().unwrap()),
            Some(&sam),
        ),
    )
    .await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
    let (response, _) = send(&app, get("/api/1/tasks", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}
