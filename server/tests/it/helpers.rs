use std::path::Path;

use app::api::ssr::AppState;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use caseload::users::{NewStaffUser, Role, create_user};
use http_body_util::BodyExt;
use queue::testing::TestDatabase;
use server::{site, web};
use tower::ServiceExt;

pub const PASSWORD: &str = "test-password";

/// The app's router on a test database, with one staff user `sam`.
pub async fn app(db: &TestDatabase) -> Router {
    create_user(
        &db.conn,
        NewStaffUser {
            username: "sam".into(),
            display_name: "Sam".into(),
            role: Role::Staff,
            password: PASSWORD.into(),
        },
    )
    .await
    .unwrap();
    let options = site::leptos_options(Path::new("target/site"), "127.0.0.1:0".parse().unwrap());
    web::router(
        AppState::new(db.conn.clone()),
        options,
        &web::WebOptions {
            secure_cookies: false,
        },
    )
}

/// Sends a request and returns the response with its body collected.
pub async fn send(app: &Router, request: Request<Body>) -> (Response<()>, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        Response::from_parts(parts, ()),
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// A form POST to a server function, as the browser's fetch sends it.
pub fn post_form(path: &str, form: &str, cookie: Option<&str>) -> Request<Body> {
    let mut request = Request::post(path)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    request.body(Body::from(form.to_owned())).unwrap()
}

pub fn get(path: &str, cookie: Option<&str>) -> Request<Body> {
    let mut request = Request::get(path);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    request.body(Body::empty()).unwrap()
}

/// Signs `sam` in and returns the session cookie (`name=value`).
pub async fn sign_in(app: &Router) -> String {
    let (response, body) = send(
        app,
        post_form(
            "/api/sign_in",
            &format!("username=sam&password={PASSWORD}"),
            None,
        ),
    )
    .await;
    assert!(
        response.status().is_success() || response.status().is_redirection(),
        "sign-in failed: {} {body}",
        response.status()
    );
    session_cookie(&response).expect("sign-in sets the session cookie")
}

pub fn session_cookie(response: &Response<()>) -> Option<String> {
    response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("bulkq_session="))
        .map(|value| value.split(';').next().unwrap_or_default().to_owned())
}

pub fn assert_status(response: &Response<()>, body: &str, expected: StatusCode) {
    assert_eq!(
        response.status(),
        expected,
        "unexpected status; body: {body}"
    );
}
