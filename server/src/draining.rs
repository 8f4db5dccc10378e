//! A node's stop, as every part of it sees it: once the first SIGTERM or SIGINT arrives the
//! node is draining. It accepts no new connections, `/readyz` answers 503 so a load balancer
//! sends nothing more, live streams tell their pages to reconnect (to another node, or to
//! this one when it is back) and end, and running tasks are handed back at their next
//! checkpoint. Without the streams' part a single open dashboard tab kept a node from ever
//! stopping: the HTTP server waits for every open connection, and a stream never ends by
//! itself.

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Whether the node is stopping; cloned into everything that must react.
#[derive(Debug, Clone, Default)]
pub struct Draining(CancellationToken);

impl Draining {
    /// Starts the drain (idempotent).
    pub fn begin(&self) {
        self.0.cancel();
    }

    pub fn has_begun(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once the drain has begun.
    pub async fn begun(&self) {
        self.0.cancelled().await;
    }

    /// [`Draining::begun`] as an owned future, for the HTTP server's graceful shutdown.
    pub fn begun_owned(&self) -> WaitForCancellationFutureOwned {
        self.0.clone().cancelled_owned()
    }
}

/// Begins the drain on the first SIGINT (Ctrl-C) or SIGTERM; a second signal exits at
/// once, for an operator who does not want to wait for the grace period.
pub async fn begin_on_signal(draining: Draining) {
    next_signal().await;
    tracing::info!("shutting down gracefully; a second signal exits at once");
    draining.begin();
    next_signal().await;
    tracing::warn!("second signal: exiting now");
    std::process::exit(130);
}

/// Resolves on the next SIGINT or SIGTERM.
async fn next_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
