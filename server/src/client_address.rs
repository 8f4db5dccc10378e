//! Where each request came from, for the per-client sign-in limit
//! ([`app::api::login_throttle`]): the TCP peer, or, behind a reverse proxy the server is
//! told to trust (`--trust-forwarded-for`), the address that proxy appended to
//! `X-Forwarded-For`. Only the last hop is taken: the ones before it are whatever the client
//! chose to send.

use std::net::{IpAddr, SocketAddr};

use app::api::login_throttle::ClientAddress;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

/// Whether `X-Forwarded-For` is believed.
#[derive(Debug, Clone, Copy)]
pub struct TrustForwardedFor(pub bool);

/// The middleware: stores the [`ClientAddress`] in the request's extensions.
pub async fn record_client_address(
    State(trust): State<TrustForwardedFor>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(address)| address.ip());
    let forwarded = trust
        .0
        .then(|| last_forwarded_hop(request.headers()))
        .flatten();
    request
        .extensions_mut()
        .insert(ClientAddress(forwarded.or(peer)));
    next.run(request).await
}

/// The last address of the last `X-Forwarded-For` header: the one the nearest proxy added.
fn last_forwarded_hop(headers: &HeaderMap) -> Option<IpAddr> {
    let header = headers.get_all("x-forwarded-for").iter().next_back()?;
    header
        .to_str()
        .ok()?
        .rsplit(',')
        .next()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn only_the_nearest_proxys_hop_counts() {
        let mut headers = HeaderMap::new();
        assert_eq!(last_forwarded_hop(&headers), None);
        headers.append(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 203.0.113.9"),
        );
        assert_eq!(last_forwarded_hop(&headers), "203.0.113.9".parse().ok());
        headers.append("x-forwarded-for", HeaderValue::from_static("2001:db8::1"));
        assert_eq!(last_forwarded_hop(&headers), "2001:db8::1".parse().ok());
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("not an address"),
        );
        assert_eq!(last_forwarded_hop(&headers), None);
    }
}
