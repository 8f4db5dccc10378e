use std::path::Path;
use std::time::Duration;

use app::api::ssr::{AppState, BulkSettings};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use caseload::users::{NewStaffUser, Role, StaffUser, create_user};
use http_body_util::BodyExt;
use queue::testing::TestDatabase;
use server::{site, web};
use tower::ServiceExt;

pub const PASSWORD: &str = "test-password-long";

/// A node's limits for tests that submit directly, far above what they ask.
pub const NODE_LIMITS: caseload::actions::NodeLimits = caseload::actions::NodeLimits {
    export_row_cap: 1_000_000,
};

/// Whoever runs `bulkq` on a shell: the audit trail's actor for changes a test makes
/// directly.
pub fn shell() -> caseload::audit::Actor {
    caseload::audit::Actor::command_line()
}

/// Creates a user who signs in with [`PASSWORD`].
pub async fn add_user(db: &TestDatabase, username: &str, role: Role) -> StaffUser {
    create_user(
        &db.conn,
        NewStaffUser {
            username: username.into(),
            display_name: username.into(),
            role,
            password: PASSWORD.into(),
        },
    )
    .await
    .unwrap()
}

/// The app's router on a test database, with one staff user `sam`.
pub async fn app(db: &TestDatabase) -> Router {
    app_with_store(db, queue::Store::new(db.conn.clone())).await
}

/// The app's router using `store` for the queue (to see its events), with the user `sam`.
pub async fn app_with_store(db: &TestDatabase, store: queue::Store) -> Router {
    app_with_settings(db, store, BulkSettings::default()).await
}

/// The app's router with `store` and these bulk-action settings, with the user `sam`.
pub async fn app_with_settings(
    db: &TestDatabase,
    store: queue::Store,
    bulk: BulkSettings,
) -> Router {
    add_user(db, "sam", Role::Staff).await;
    router(db, store, bulk)
}

/// The app's router, as `bulkq serve` builds it, on a test database that has its users.
pub fn router(db: &TestDatabase, store: queue::Store, bulk: BulkSettings) -> Router {
    router_with(db, store, bulk, &web::WebOptions::default())
}

/// The app's router with these web options (its store on the test database's pool).
pub fn router_with_options(db: &TestDatabase, options: &web::WebOptions) -> Router {
    let store = queue::Store::new(db.conn.clone());
    router_with(db, store, BulkSettings::default(), options)
}

fn router_with(
    db: &TestDatabase,
    store: queue::Store,
    bulk: BulkSettings,
    options: &web::WebOptions,
) -> Router {
    let site = site::leptos_options(Path::new("target/site"), "127.0.0.1:0".parse().unwrap());
    web::router(AppState::new(db.conn.clone(), store, bulk), site, options)
}

/// How long a response, body included, may take before the test fails: far beyond any
/// page's or API call's time under test load, so reaching it means the response will never
/// finish (a streamed page once stalled like that, and the test then waited until CI's time
/// limit; see ARCHITECTURE, "Tests").
const RESPONSE_LIMIT: Duration = Duration::from_secs(60);

/// Sends a request and returns the response with its body collected; panics, naming the
/// request, if that takes longer than [`RESPONSE_LIMIT`].
pub async fn send(app: &Router, request: Request<Body>) -> (Response<()>, String) {
    let what = format!("{} {}", request.method(), request.uri());
    let exchange = async {
        let response = app.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (
            Response::from_parts(parts, ()),
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    };
    tokio::time::timeout(RESPONSE_LIMIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{what}: no complete response after {RESPONSE_LIMIT:?}"))
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

/// A JSON POST as an API client sends it (`body` is sent as is, so it may be malformed).
pub fn post_json(path: &str, body: &str, cookie: Option<&str>) -> Request<Body> {
    let mut request = Request::post(path).header(header::CONTENT_TYPE, "application/json");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    request.body(Body::from(body.to_owned())).unwrap()
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
    sign_in_as(app, "sam").await
}

/// Signs a user in and returns the session cookie (`name=value`).
pub async fn sign_in_as(app: &Router, username: &str) -> String {
    let form = format!("username={username}&password={PASSWORD}");
    let (response, body) = send(app, post_form("/api/sign_in", &form, None)).await;
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

/// `csv` stored as an upload of `user_id`'s, as a browser's or the command's upload stores
/// it.
pub async fn uploaded(
    store: &queue::Store,
    user_id: uuid::Uuid,
    csv: &[u8],
) -> caseload::people_import::upload::Upload {
    use caseload::people_import::upload::UploadWriter;
    let mut writer = UploadWriter::begin(store, user_id, "people.csv", u64::MAX)
        .await
        .unwrap();
    writer.write(store, csv).await.unwrap();
    writer.finish(store).await.unwrap()
}

/// `count` people of program status ACTIVE as a CSV file of the import's four columns, school
/// ids `<prefix>0`, `<prefix>1`, ….
pub fn active_people_csv(prefix: &str, count: u32) -> Vec<u8> {
    let mut csv = b"school_id,first_name,last_name,program_status\n".to_vec();
    for n in 0..count {
        csv.extend_from_slice(format!("{prefix}{n},First{n},Last{n},ACTIVE\n").as_bytes());
    }
    csv
}

/// The import of `csv` by the admin `admin` ("ada"), uploaded, previewed and started as
/// the dashboard would: its task, queued.
pub async fn import_started(
    db: &TestDatabase,
    store: &queue::Store,
    admin: uuid::Uuid,
    csv: &[u8],
) -> queue::Task {
    use caseload::people_import::{ImportSpec, preview::preview, start::start_import};
    let upload = uploaded(store, admin, csv).await;
    let seen = preview(&db.conn, &upload, None, false).await.unwrap();
    let spec = ImportSpec::of(&upload, &seen, false);
    let by = caseload::audit::Actor::staff(admin, "ada", "");
    start_import(store, &by, &spec).await.unwrap()
}

/// How many people the planner's statistics say `person` holds (-1 if it was never
/// analysed): on SQLite from `sqlite_stat1`, on PostgreSQL from the catalog.
pub async fn people_the_planner_counts(db: &TestDatabase) -> i64 {
    db.scalar(match db.backend {
        queue::testing::Backend::Postgres => {
            "SELECT reltuples::bigint FROM pg_class WHERE oid = 'person'::regclass"
        }
        queue::testing::Backend::Sqlite => {
            "SELECT COALESCE(MAX(CAST(substr(stat, 1, instr(stat, ' ') - 1) AS INTEGER)), -1) \
             FROM sqlite_stat1 WHERE tbl = 'person'"
        }
    })
    .await
}
