//! The HTTP surface: the Leptos pages and server functions, health checks, metrics and static
//! files, behind the session layer and the sign-in gate.

use std::sync::LazyLock;

use app::api::ssr::AppState;
use app::{App, shell};
use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{AxumRouteListing, LeptosRoutes, generate_route_list};
use migration::{Migrator, MigratorTrait};
use sea_orm::DatabaseConnection;
use tower_http::trace::TraceLayer;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

use crate::api;
use crate::session_store::DatabaseSessionStore;
use crate::{auth_gate, csrf};

/// The session cookie's name.
const SESSION_COOKIE: &str = "bulkq_session";
/// A session ends after this long without a request.
const SESSION_IDLE_TIMEOUT: time::Duration = time::Duration::hours(8);

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
    /// Mark the session cookie `Secure` (HTTPS only).
    pub secure_cookies: bool,
}

/// Builds the application's router.
pub fn router(state: AppState, leptos_options: LeptosOptions, options: &WebOptions) -> Router {
    let readiness = state.db.clone();
    let queue = state.store.clone();
    crate::metrics::recorder();
    let sessions = SessionManagerLayer::new(DatabaseSessionStore::new(state.db.clone()))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(options.secure_cookies)
        .with_expiry(Expiry::OnInactivity(SESSION_IDLE_TIMEOUT));
    let api = api::router(state.clone());
    let context = move || provide_context(state.clone());
    let render = {
        let leptos_options = leptos_options.clone();
        move || shell(leptos_options.clone())
    };
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(move || readyz(readiness.clone())))
        .route(
            "/metrics",
            get(move || crate::metrics::metrics(queue.clone())),
        )
        .nest("/api/1", api)
        .leptos_routes_with_context(&leptos_options, PAGES.clone(), context, render)
        .fallback(leptos_axum::file_and_error_handler(shell))
        .layer(axum::middleware::from_fn(auth_gate::require_sign_in))
        .layer(sessions)
        .layer(axum::middleware::from_fn(csrf::reject_cross_site_writes))
        .layer(TraceLayer::new_for_http())
        .with_state(leptos_options)
}

/// Liveness: the process is up and serving HTTP.
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers and its schema is the one this binary expects, so a load
/// balancer sends no traffic to a node that cannot serve it (or that runs ahead of a
/// migration another node has not applied yet).
async fn readyz(db: DatabaseConnection) -> (StatusCode, String) {
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
