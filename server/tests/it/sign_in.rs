use axum::http::{StatusCode, header};
use migration::Migrator;
use queue::testing::TestDatabase;

use crate::helpers::*;

queue::backend_tests!(Migrator => pages_need_a_session, sign_in_and_out, bad_credentials_are_refused, sign_in_replaces_the_session_a_browser_brought);

async fn pages_need_a_session(db: TestDatabase) {
    let app = app(&db).await;
    let (response, _) = send(&app, get("/healthz", None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (response, body) = send(&app, get("/readyz", None)).await;
    assert_status(&response, &body, StatusCode::OK);

    let (response, _) = send(&app, get("/", None)).await;
    assert!(response.status().is_redirection());
    assert_eq!(response.headers()[header::LOCATION], "/login");

    let (response, body) = send(&app, get("/login", None)).await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(body.contains("Sign in to bulkq"), "{body}");
}

async fn sign_in_and_out(db: TestDatabase) {
    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    // The session lives in the database, so it survives a restart of the process.
    assert_eq!(db.scalar("SELECT COUNT(*) FROM web_session").await, 1);

    let (response, body) = send(&app, get("/", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(body.contains("Caseload"));
    // A signed-in visitor of the sign-in page goes to the caseload.
    let (response, _) = send(&app, get("/login", Some(&cookie))).await;
    assert_eq!(response.headers()[header::LOCATION], "/");

    let (response, body) = send(&app, post_form("/api/current_user", "", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(body.contains("\"username\":\"sam\""), "{body}");

    let (response, body) = send(&app, post_form("/api/sign_out", "", Some(&cookie))).await;
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "{body}"
    );
    let (response, _) = send(&app, get("/", Some(&cookie))).await;
    assert_eq!(response.headers()[header::LOCATION], "/login");
}

/// A session id the browser brought to sign-in, whether stored or not, is not the one it
/// leaves with: an id planted before sign-in is worthless after it.
async fn sign_in_replaces_the_session_a_browser_brought(db: TestDatabase) {
    use tower_sessions::session::Id;

    let app = app(&db).await;
    let first = sign_in(&app).await;
    let form = format!("username=sam&password={PASSWORD}");
    let stale = format!("bulkq_session={}", Id::default());
    let mut cookies = vec![first.clone()];
    for brought in [&first, &stale] {
        let (response, body) = send(&app, post_form("/api/sign_in", &form, Some(brought))).await;
        assert!(
            response.status().is_success() || response.status().is_redirection(),
            "{body}"
        );
        let cookie = session_cookie(&response).expect("sign-in sets the session cookie");
        assert!(!cookies.contains(&cookie), "{cookie} was used before");
        cookies.push(cookie);
    }
    // The first session is gone; the two sign-ins since hold one row each.
    let (response, _) = send(&app, get("/", Some(&first))).await;
    assert_eq!(response.headers()[header::LOCATION], "/login");
    assert_eq!(db.scalar("SELECT COUNT(*) FROM web_session").await, 2);
    for cookie in &cookies[1..] {
        let (response, body) = send(&app, get("/", Some(cookie))).await;
        assert_status(&response, &body, StatusCode::OK);
    }
}

async fn bad_credentials_are_refused(db: TestDatabase) {
    let app = app(&db).await;
    for form in [
        "username=sam&password=wrong",
        "username=nobody&password=test-password",
    ] {
        let (response, body) = send(&app, post_form("/api/sign_in", form, None)).await;
        assert_status(&response, &body, StatusCode::UNAUTHORIZED);
        assert!(body.contains("BadCredentials"), "{body}");
        assert!(session_cookie(&response).is_none());
    }
    let (response, body) = send(
        &app,
        post_form("/api/sign_in", "username=sam&password=", None),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    // A body the server function cannot decode is the client's fault: 4xx, not 500.
    let (response, body) = send(&app, post_form("/api/sign_in", "%%%", None)).await;
    assert!(
        response.status().is_client_error(),
        "{} {body}",
        response.status()
    );
}

queue::backend_tests!(Migrator => cross_site_posts_are_refused, repeated_failures_are_throttled);

async fn cross_site_posts_are_refused(db: TestDatabase) {
    let app = app(&db).await;
    let form = format!("username=sam&password={PASSWORD}");
    let mut forged = post_form("/api/sign_in", &form, None);
    forged
        .headers_mut()
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    let (response, _) = send(&app, forged).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(session_cookie(&response).is_none());

    let mut forged = post_form("/api/sign_in", &form, None);
    forged
        .headers_mut()
        .insert(header::ORIGIN, "https://evil.example".parse().unwrap());
    forged
        .headers_mut()
        .insert(header::HOST, "127.0.0.1:3000".parse().unwrap());
    assert_eq!(send(&app, forged).await.0.status(), StatusCode::FORBIDDEN);

    let mut own = post_form("/api/sign_in", &form, None);
    own.headers_mut()
        .insert("sec-fetch-site", "same-origin".parse().unwrap());
    let (response, body) = send(&app, own).await;
    assert!(
        session_cookie(&response).is_some(),
        "{} {body}",
        response.status()
    );
}

async fn repeated_failures_are_throttled(db: TestDatabase) {
    let app = app(&db).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let (response, _) = send(
            &app,
            post_form("/api/sign_in", "username=sam&password=guess", None),
        )
        .await;
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    // Even the right password waits until the limit recovers.
    let form = format!("username=sam&password={PASSWORD}");
    let (response, body) = send(&app, post_form("/api/sign_in", &form, None)).await;
    assert_status(&response, &body, StatusCode::TOO_MANY_REQUESTS);
}

queue::backend_tests!(Migrator => activity_keeps_a_session_alive);

/// A session's stored expiry moves on with the user's requests (at most once a minute),
/// so an active user is not signed out a fixed time after signing in; requests that are
/// not a signed-in user's leave the session table alone.
async fn activity_keeps_a_session_alive(db: TestDatabase) {
    use app::api::session_store::DatabaseSessionStore;
    use time::{Duration, OffsetDateTime};
    use tower_sessions::SessionStore;
    use tower_sessions::session::Id;

    let app = app(&db).await;
    let cookie = sign_in(&app).await;
    let id: Id = cookie.trim_start_matches("bulkq_session=").parse().unwrap();
    let sessions = DatabaseSessionStore::new(queue::Store::new(db.conn.clone()));
    let stored_expiry = || async { sessions.load(&id).await.unwrap().unwrap().expiry_date };

    // As if the user signed in seven hours ago and has been idle since.
    let mut record = sessions.load(&id).await.unwrap().unwrap();
    record.expiry_date = OffsetDateTime::now_utc() + Duration::hours(1);
    sessions.save(&record).await.unwrap();
    assert!(stored_expiry().await < OffsetDateTime::now_utc() + Duration::hours(2));

    let (response, body) = send(&app, get("/", Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert!(stored_expiry().await > OffsetDateTime::now_utc() + Duration::hours(7));

    // Within a minute of the stored expiry, an unchanged session is not written again; a
    // change of its data, or of its expiry by more, is.
    let mut record = sessions.load(&id).await.unwrap().unwrap();
    let written = record.expiry_date;
    record.expiry_date = written + Duration::seconds(30);
    sessions.save(&record).await.unwrap();
    assert_eq!(stored_expiry().await, written);
    record.expiry_date = written + Duration::minutes(2);
    sessions.save(&record).await.unwrap();
    assert_eq!(stored_expiry().await, written + Duration::minutes(2));
    record.expiry_date += Duration::seconds(30);
    record
        .data
        .insert("note".into(), serde_json::json!("changed"));
    sessions.save(&record).await.unwrap();
    assert_eq!(stored_expiry().await, record.expiry_date);

    // A stale cookie, on a page or an asset, creates no session.
    let stale = format!("bulkq_session={}", Id::default());
    for path in ["/", "/pkg/bulkq.js", "/healthz"] {
        send(&app, get(path, Some(&stale))).await;
    }
    assert_eq!(db.scalar("SELECT COUNT(*) FROM web_session").await, 1);
}
