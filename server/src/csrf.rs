//! Cross-site request forgery protection: state-changing requests (anything but GET, HEAD
//! and OPTIONS; every server function is a POST) must come from our own pages.
//!
//! Two layers, following OWASP's guidance for cookie sessions without tokens:
//! 1. The session cookie is `SameSite=Lax`, so a browser does not attach it to a cross-site
//!    POST in the first place.
//! 2. This middleware checks the headers browsers set and pages cannot forge:
//!    `Sec-Fetch-Site` (every current browser) must be `same-origin` (or `none`, a request
//!    the user made directly); where it is missing, an `Origin` header must match `Host`.
//!
//! A request with neither header is not from a browser (curl, another program), and
//! forgery is a browser attack, so it passes; it still needs a valid session to do anything.
//! So does a JSON API request with an `Authorization` header: it is judged by its token
//! alone (`api::user`), which a browser never sends by itself.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The middleware.
pub async fn reject_cross_site_writes(request: Request, next: Next) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let api_with_token = request.uri().path().starts_with("/api/1/")
        && request.headers().contains_key(header::AUTHORIZATION);
    if safe || api_with_token || is_same_origin(request.headers()) {
        next.run(request).await
    } else {
        tracing::warn!(path = %request.uri().path(), "refused a cross-site request");
        (
            StatusCode::FORBIDDEN,
            "Cross-site requests are not allowed.",
        )
            .into_response()
    }
}

fn is_same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.to_str(), Ok("same-origin" | "none"));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin_host = origin.to_str().ok().and_then(|origin| {
        origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
    });
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok());
    matches!((origin_host, host), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn browsers_fetch_metadata_decides_when_present() {
        assert!(is_same_origin(&headers(&[(
            "sec-fetch-site",
            "same-origin"
        )])));
        assert!(is_same_origin(&headers(&[("sec-fetch-site", "none")])));
        assert!(!is_same_origin(&headers(&[(
            "sec-fetch-site",
            "cross-site"
        )])));
        assert!(!is_same_origin(&headers(&[(
            "sec-fetch-site",
            "same-site"
        )])));
    }

    #[test]
    fn otherwise_the_origin_must_match_the_host() {
        let same = [
            ("origin", "http://127.0.0.1:3000"),
            ("host", "127.0.0.1:3000"),
        ];
        assert!(is_same_origin(&headers(&same)));
        let other = [
            ("origin", "https://evil.example"),
            ("host", "127.0.0.1:3000"),
        ];
        assert!(!is_same_origin(&headers(&other)));
        assert!(!is_same_origin(&headers(&[
            ("origin", "null"),
            ("host", "h")
        ])));
        // Not a browser: nothing to forge with.
        assert!(is_same_origin(&headers(&[("host", "127.0.0.1:3000")])));
    }
}
