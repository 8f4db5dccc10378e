//! The HTTP surface: the Leptos pages and server functions, health checks, metrics and static
//! files, behind the session layer and the sign-in gate.

use std::sync::LazyLock;
use std::time::Duration;

use app::api::session_store::DatabaseSessionStore;
use app::api::ssr::AppState;
use app::{App, shell};
use axum::Router;
use axum::http::StatusCode;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{AxumRouteListing, LeptosRoutes, generate_route_list};
use migration::{Migrator, MigratorTrait};
use sea_orm::DatabaseConnection;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::api;
use crate::api::stream_limit::{STREAMS_PER_USER_DEFAULT, StreamLimit};
use crate::client_address::{TrustForwardedFor, record_client_address};
use crate::draining::Draining;
use crate::failsafe::{self, RequestTimeout};
use crate::security_headers::{Https, add_security_headers};
use crate::session_renewal::{self, SESSION_IDLE_TIMEOUT};
use crate::{auth_gate, csrf};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "bulkq_session";

/// The app's pages, listed once per process and shared by every router built in it.
///
/// Listing them renders the app with resource loading switched off, and leptos keeps that
/// switch in one process-wide flag (`leptos_server::SuppressResourceLoad`): every resource
/// that any server render in the process creates meanwhile waits forever, so its page never
/// finishes streaming. A process building one router before serving never meets that, but
/// the tests build a router per test, many at once: a page rendered while another test
/// built its router stalled (20 fresh routers at a time: 16–24 of 100 pages of `/` still
/// unfinished after 30 s; none once listed once).
static PAGES: LazyLock<Vec<AxumRouteListing>> = LazyLock::new(|| generate_route_list(App));

/// How the web layer is set up.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// Mark the session cookie `Secure` (HTTPS only), and tell browsers to stay on HTTPS.
    pub secure_cookies: bool,
    /// How long a request may take to produce its response.
    pub request_timeout: Duration,
    /// Live update streams one user may hold open on this node.
    pub streams_per_user: usize,
    /// Take the client's address from the last `X-Forwarded-For` hop (behind a proxy).
    pub trust_forwarded_for: bool,
    /// The node's stop: live streams end and `/readyz` answers 503 once it begins.
    pub draining: Draining,
}

/// Default [`WebOptions::request_timeout`]: far beyond any page or submission (which take
/// milliseconds), short enough that a stuck request frees its connection.
pub const REQUEST_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            secure_cookies: false,
            request_timeout: REQUEST_TIMEOUT_DEFAULT,
            streams_per_user: STREAMS_PER_USER_DEFAULT,
            trust_forwarded_for: false,
            draining: Draining::default(),
        }
    }
}

/// Builds the application's router.
pub fn router(state: AppState, leptos_options: LeptosOptions, options: &WebOptions) -> Router {
    let readiness = (state.db.clone(), options.draining.clone());
    let queue = state.store.clone();
    crate::metrics::recorder();
    let sessions = SessionManagerLayer::new(DatabaseSessionStore::new(state.store.clone()))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(options.secure_cookies)
        .with_expiry(Expiry::OnInactivity(SESSION_IDLE_TIMEOUT));
    let api = api::router(api::ApiState {
        app: state.clone(),
        streams: StreamLimit::new(options.streams_per_user),
        draining: options.draining.clone(),
    });
    let imports = crate::imports::routes(state.clone());
    let audit_csv = crate::audit_csv::routes(state.clone());
    let context = move || provide_context(state.clone());
    let render = {
        let leptos_options = leptos_options.clone();
        move || shell(leptos_options.clone())
    };
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .route(
            "/readyz",
            get(move || readyz(readiness.0.clone(), readiness.1.clone())),
        )
        .route(
            "/metrics",
            get(move || crate::metrics::metrics(queue.clone())),
        )
        .nest("/api/1", api)
        .merge(imports)
        .merge(audit_csv)
        .leptos_routes_with_context(&leptos_options, PAGES.clone(), context, render)
        .fallback(leptos_axum::file_and_error_handler(shell))
        .layer(axum::middleware::from_fn(auth_gate::require_sign_in))
        .layer(axum::middleware::from_fn(session_renewal::renew_signed_in))
        .layer(sessions)
        .layer(axum::middleware::from_fn(csrf::reject_cross_site_writes));
    with_guards(routes, options).with_state(leptos_options)
}

/// `routes` inside the guards every request passes: its count and time
/// ([`crate::http_metrics`]), its id and log span, the security headers, the panic and
/// timeout answers ([`failsafe`]) and the client's address.
pub fn with_guards<S: Clone + Send + Sync + 'static>(
    routes: Router<S>,
    options: &WebOptions,
) -> Router<S> {
    routes
        .layer(from_fn_with_state(
            TrustForwardedFor(options.trust_forwarded_for),
            record_client_address,
        ))
        .layer(from_fn_with_state(
            RequestTimeout(options.request_timeout),
            failsafe::time_limit,
        ))
        .layer(CatchPanicLayer::custom(failsafe::panic_response))
        .layer(from_fn_with_state(
            Https(options.secure_cookies),
            add_security_headers,
        ))
        .layer(TraceLayer::new_for_http().make_span_with(request_span))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(axum::middleware::from_fn(crate::http_metrics::record))
}

/// Each request's log span, carrying the id that its response's `x-request-id` header shows.
fn request_span(request: &axum::http::Request<axum::body::Body>) -> tracing::Span {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|id| id.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
}

/// Liveness: the process is up and serving HTTP, and which version it runs.
async fn healthz() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

/// Readiness: the node is not stopping, the database answers and its schema is the one this
/// binary expects, so a load balancer sends no traffic to a node that cannot serve it (or
/// that runs ahead of a migration another node has not applied yet).
async fn readyz(db: DatabaseConnection, draining: Draining) -> (StatusCode, String) {
    if draining.has_begun() {
        return (StatusCode::SERVICE_UNAVAILABLE, "stopping".into());
    }
    match Migrator::get_pending_migrations(&db).await {
        Ok(pending) if pending.is_empty() => (StatusCode::OK, "ready".into()),
        Ok(pending) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{} database migrations are pending", pending.len()),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness check: the database does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the database does not answer".into(),
            )
        }
    }
}
