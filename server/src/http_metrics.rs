//! Every HTTP answer counted and timed for `/metrics`, by route template (`/tasks/{id}`,
//! never the id itself, so the series stay few), method and status.
//!
//! Layered on the router, the middleware runs after routing, so it sees the route that
//! matched; answers no route matched (static files, 404s) count as `fallback`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

/// Answers by route, method and status.
pub const REQUESTS: &str = "bulkq_http_requests_total";
/// Time to the answer's head (a streamed body may go on), by route and method.
pub const DURATION: &str = "bulkq_http_request_duration_seconds";

/// Says what the two series mean, for the exporter's `# HELP` lines.
pub fn describe() {
    describe_counter!(
        REQUESTS,
        "HTTP answers, by route template, method and status"
    );
    describe_histogram!(
        DURATION,
        Unit::Seconds,
        "Time from a request to its answer's head, by route template and method"
    );
}

/// The middleware.
pub async fn record(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "fallback".to_owned(), |path| path.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    histogram!(DURATION, "route" => route.clone(), "method" => method.clone())
        .record(started.elapsed().as_secs_f64());
    counter!(REQUESTS, "route" => route, "method" => method, "status" => status).increment(1);
    response
}
