//! The response headers that tell browsers how to treat what we send, added to every answer
//! in one place so no route can forget them.
//!
//! - Pages bring their own Content Security Policy, with the nonce of their inline scripts
//!   (see `app::shell`); every other answer gets one that allows nothing to run or frame it.
//! - `nosniff`, `Referrer-Policy: same-origin` and `X-Frame-Options: DENY` (for browsers
//!   that predate `frame-ancestors`) everywhere.
//! - `Cache-Control: no-store` on the API and its downloads: they carry personal data, which
//!   no shared or browser cache should keep.
//! - `Strict-Transport-Security` when the node runs behind HTTPS (`--secure-cookies`).

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The policy of everything that is not a page: nothing may run, load or frame it.
const LOCKED_DOWN_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";

/// A year, as browsers expect of a site that is HTTPS for good.
const HSTS: &str = "max-age=31536000";

/// Whether the node is served over HTTPS (then browsers are told to stay on it).
#[derive(Debug, Clone, Copy)]
pub struct Https(pub bool);

/// The middleware.
pub async fn add_security_headers(
    State(https): State<Https>,
    request: Request,
    next: Next,
) -> Response {
    let private = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let mut set = |name: HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(header::REFERRER_POLICY, "same-origin");
    set(header::X_FRAME_OPTIONS, "DENY");
    if private {
        set(header::CACHE_CONTROL, "no-store");
    }
    if https.0 {
        set(header::STRICT_TRANSPORT_SECURITY, HSTS);
    }
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(LOCKED_DOWN_POLICY));
    response
}
