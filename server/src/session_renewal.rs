//! A signed-in user's session ends after [`SESSION_IDLE_TIMEOUT`] without a request, not
//! that long after signing in.
//!
//! tower-sessions saves a session, and so moves its stored expiry on, only when the request
//! changed it. This middleware marks every request of a signed-in user as such a change
//! (the session store skips the write while the expiry moved by less than a minute). It
//! leaves anonymous requests alone: a save would create a session for them.

use app::api::ssr::SESSION_USER_ID;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tower_sessions::{Expiry, Session};
use uuid::Uuid;

use crate::auth_gate::is_asset_or_probe;

/// A session ends after this long without a request.
pub const SESSION_IDLE_TIMEOUT: time::Duration = time::Duration::hours(8);

/// The middleware; inside the session layer.
pub async fn renew_signed_in(session: Session, request: Request, next: Next) -> Response {
    if !is_asset_or_probe(request.uri().path())
        && matches!(session.get::<Uuid>(SESSION_USER_ID).await, Ok(Some(_)))
    {
        session.set_expiry(Some(Expiry::OnInactivity(SESSION_IDLE_TIMEOUT)));
    }
    next.run(request).await
}
