//! The node's HTTP listener: each accepted connection served by hyper with the router, under
//! limits that keep slow, idle or numerous clients from holding the node
//! ([`ConnectionLimits`]), until the node drains.
//!
//! `axum::serve` offers neither limit: a client could open a connection and send its
//! headers a byte a minute, or keep thousands of idle connections, each holding a file
//! descriptor and a task for ever.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::{Service, ServiceExt};

use crate::draining::Draining;

/// Default [`ConnectionLimits::header_read_timeout`]: ample for any real client, even on a
/// poor mobile link, and short enough that a slow-header attack holds little.
pub const HEADER_READ_TIMEOUT_DEFAULT: Duration = Duration::from_secs(20);
/// Default [`ConnectionLimits::max_connections`]: far above what an office's browsers hold
/// (six per tab, most of them idle), well under a process's usual 1,024 file descriptors
/// less the database's and the queue's.
pub const MAX_CONNECTIONS_DEFAULT: usize = 768;

/// How much of the node one client's connections may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to send a request's headers, counted from the moment the
    /// connection is ready for a request: its start, or the end of the previous response.
    /// So it is also how long a kept-alive connection may sit idle.
    pub header_read_timeout: Duration,
    /// Connections served at once; further ones wait in the system's accept queue until
    /// one ends.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT_DEFAULT,
            max_connections: MAX_CONNECTIONS_DEFAULT,
        }
    }
}

/// How long to wait before accepting again after the system refused (out of file
/// descriptors, say): accepting at once would spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until the drain begins, then waits for the connections in
/// flight: each finishes its current request and closes (live streams end by themselves
/// on the drain). The caller bounds the wait.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    draining: Draining,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let mut make_service = router.into_make_service_with_connect_info::<SocketAddr>();
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break, // never closed
            },
            () = draining.begun() => break,
        };
        let (socket, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            () = draining.begun() => break,
        };
        if let Err(error) = socket.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY refused");
        }
        let Ok(service) = make_service.call(remote).await;
        let service = service.map_request(|request: Request<Incoming>| request.map(Body::new));
        let connection =
            builder.serve_connection(TokioIo::new(socket), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, %remote, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
