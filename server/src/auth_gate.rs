//! Sends anonymous visitors of any page to the sign-in page, signed-in visitors of the
//! sign-in page to the caseload, and users who must choose a new password to their account
//! page.
//!
//! Pages are gated here, once, rather than in each component, so a new page cannot forget it.
//! Server functions are not redirected: they check the user themselves and answer 401, which
//! is what an API client needs.

use app::api::ssr::{SESSION_MUST_CHANGE_PASSWORD, SESSION_USER_ID};
use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tower_sessions::Session;
use uuid::Uuid;

/// Where anonymous visitors are sent.
pub const SIGN_IN_PATH: &str = "/login";
/// Where a user who must choose a new password is sent.
pub const ACCOUNT_PATH: &str = "/account";

/// Paths anyone may fetch: [`is_asset_or_probe`] and the server functions.
fn is_public(path: &str) -> bool {
    is_asset_or_probe(path) || path.starts_with("/api/")
}

/// Health checks, metrics and the built assets: fetched by machines or for any page, never a
/// sign of a user's activity.
pub fn is_asset_or_probe(path: &str) -> bool {
    path == "/healthz"
        || path == "/readyz"
        || path == "/metrics"
        || path == "/favicon.svg"
        || path.starts_with("/pkg/")
}

/// The middleware.
pub async fn require_sign_in(session: Session, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if request.method() != Method::GET || is_public(path) {
        return next.run(request).await;
    }
    let signed_in = matches!(session.get::<Uuid>(SESSION_USER_ID).await, Ok(Some(_)));
    let must_change_password = matches!(
        session.get::<bool>(SESSION_MUST_CHANGE_PASSWORD).await,
        Ok(Some(true))
    );
    match (signed_in, path) {
        (false, SIGN_IN_PATH) => next.run(request).await,
        (false, _) => Redirect::to(SIGN_IN_PATH).into_response(),
        (true, SIGN_IN_PATH) => Redirect::to("/").into_response(),
        (true, ACCOUNT_PATH) => next.run(request).await,
        (true, _) if must_change_password => Redirect::to(ACCOUNT_PATH).into_response(),
        (true, _) => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::is_public;

    #[test]
    fn only_assets_health_and_server_functions_are_public() {
        assert!(is_public("/healthz"));
        assert!(is_public("/readyz"));
        assert!(is_public("/metrics"));
        assert!(is_public("/pkg/bulkq.wasm"));
        assert!(is_public("/api/sign_in"));
        assert!(!is_public("/"));
        assert!(!is_public("/login"));
        assert!(!is_public("/pkgs"));
    }
}
