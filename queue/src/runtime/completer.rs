//! Batched completion: workers' outcomes are applied in one transaction per batch. A commit is
//! the expensive part of a transition (an fsync on SQLite), so whatever has finished while the
//! previous batch committed goes into the next one. No waiting for a batch to fill up: a
//! lone outcome is applied at once.
//!
//! On PostgreSQL two batches may be in flight at once, on two connections: with one, a
//! node's completions were a single sequential stream beside its claims, and a quarter of
//! two cores sat idle during a drain. Outcomes are independent (one per claim, each guarded
//! by its own lease), so their order does not matter. SQLite has one writer: a second
//! batch would only queue for it.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::DbBackend;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::store::Store;
use crate::store::transition::Finish;

/// Attempts to apply a batch before giving up on it (its tasks are then rescued after the
/// node restarts, like after a crash).
const APPLY_ATTEMPTS: u32 = 8;
/// The first pause between attempts; doubled each time.
const APPLY_BACKOFF: Duration = Duration::from_millis(100);
/// Batches applied at once on PostgreSQL (see the module documentation). A second stream
/// lets one node use the cores its single stream left idle; more would only contend with
/// the claimers for the same cores, as two nodes' four streams already do (ADR 0021).
const POSTGRES_STREAMS: usize = 2;

pub(crate) struct Completer {
    pub store: Store,
    pub outcomes: mpsc::Receiver<Finish>,
    /// Outcomes per transaction at most.
    pub batch_max: usize,
    pub node_id: Arc<str>,
}

impl Completer {
    /// Applies outcomes until every sender (workers and producer) is gone, then waits for
    /// the batches still being applied.
    pub async fn run(mut self) {
        let streams = match self.store.backend() {
            DbBackend::Postgres => POSTGRES_STREAMS,
            _ => 1,
        };
        let mut applying = JoinSet::new();
        loop {
            // A free stream first, then whatever has arrived meanwhile: the batches stay as
            // large as the wait allows.
            while applying.len() >= streams {
                applying.join_next().await;
            }
            let mut batch = Vec::with_capacity(self.batch_max);
            if self.outcomes.recv_many(&mut batch, self.batch_max).await == 0 {
                break;
            }
            applying.spawn(apply(self.store.clone(), self.node_id.clone(), batch));
        }
        applying.join_all().await;
    }
}

/// Applies one batch of outcomes, retrying with backoff; gives up after [`APPLY_ATTEMPTS`].
async fn apply(store: Store, node_id: Arc<str>, batch: Vec<Finish>) {
    let mut backoff = APPLY_BACKOFF;
    for attempt in 1..=APPLY_ATTEMPTS {
        let now = store.clock().now();
        match store
            .task_finish_many_if_running(&batch, now, &node_id)
            .await
        {
            Ok(changed) => {
                if changed.len() < batch.len() {
                    tracing::info!(
                        discarded = batch.len() - changed.len(),
                        "outcomes of lost claims discarded"
                    );
                }
                return;
            }
            Err(error) => {
                tracing::warn!(%error, attempt, "applying task outcomes failed");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
    }
    tracing::error!(
        tasks = batch.len(),
        "gave up applying task outcomes; they are rescued after a restart"
    );
}
