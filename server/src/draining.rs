//! A node's stop, as every part of it sees it: once the first SIGTERM or SIGINT arrives the
//! node is draining. It accepts no new connections, `/readyz` answers 503 so a load balancer
//! sends nothing more, live streams tell their pages to reconnect (to another node, or to
//! this one when it is back) and end, and running tasks are handed back at their next
//! checkpoint. Without the streams' part a single open dashboard tab kept a node from ever
//! stopping: the HTTP server waits for every open connection, and a stream never ends by
//! itself.

use tokio::signal::unix::{Signal, SignalKind, signal};
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

/// SIGINT (Ctrl-C) and SIGTERM, caught from the moment they are [listened
/// for](StopSignals::listen): a deploy's stop that arrives while the node is still starting
/// (migrating, starting its queue) is kept and begins the drain as soon as it can, instead
/// of killing the process by the signal's default action.
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Installs the handlers now.
    pub fn listen() -> std::io::Result<Self> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves on the next SIGINT or SIGTERM (at once for one caught earlier).
    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }
}

/// Begins the drain on the first SIGINT or SIGTERM; a second signal exits at once, for an
/// operator who does not want to wait for the grace period.
pub async fn begin_on_signal(mut signals: StopSignals, draining: Draining) {
    signals.next().await;
    tracing::info!("shutting down gracefully; a second signal exits at once");
    draining.begin();
    signals.next().await;
    tracing::warn!("second signal: exiting now");
    std::process::exit(130);
}
