//! What answers when a handler cannot: a panic becomes a 500 and a request that takes too
//! long a 503, each with the API's JSON error body, so no request ever ends in a dropped
//! connection or a reply that never comes. Both are logged inside the request's span, which
//! carries its `x-request-id` (also sent back in the response headers).

use std::any::Any;
use std::time::Duration;

use app::error::AppError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// How long a request may take to produce its response (a stream's body may go on).
#[derive(Debug, Clone, Copy)]
pub struct RequestTimeout(pub Duration);

/// The answer to a handler, server function or page render that panicked.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = message, "a request handler panicked");
    AppError::Internal.into_response()
}

/// The middleware that ends a request whose response takes longer than the timeout.
pub async fn time_limit(
    State(limit): State<RequestTimeout>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    match tokio::time::timeout(limit.0, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(%path, timeout = ?limit.0, "a request took too long and was ended");
            AppError::TimedOut {
                seconds: limit.0.as_secs(),
            }
            .into_response()
        }
    }
}
