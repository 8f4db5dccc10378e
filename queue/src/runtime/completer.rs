//! Batched completion: workers' outcomes are applied in one transaction per batch. A commit is
//! the expensive part of a transition (an fsync on SQLite), so whatever has finished while the
//! previous batch committed goes into the next one. No waiting for a batch to fill up: a
//! lone outcome is applied at once.
//!
//! One batch is applied at a time, on both backends. SQLite has one writer, so a second
//! batch would only queue for it; on PostgreSQL a second batch in flight split the outcomes
//! into smaller batches, each a statement, a trigger run and a commit of its own, and the
//! drain ran slower for it on two cores (ADR 0021).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::store::Store;
use crate::store::transition::Finish;

/// Attempts to apply a batch before giving up on it (its tasks are then rescued after the
/// node restarts, like after a crash).
const APPLY_ATTEMPTS: u32 = 8;
/// The first pause between attempts; doubled each time.
const APPLY_BACKOFF: Duration = Duration::from_millis(100);

pub(crate) struct Completer {
    pub store: Store,
    pub outcomes: mpsc::Receiver<Finish>,
    /// Outcomes per transaction at most.
    pub batch_max: usize,
    pub node_id: Arc<str>,
}

impl Completer {
    /// Applies outcomes until every sender (workers and producer) is gone.
    pub async fn run(mut self) {
        let mut batch = Vec::with_capacity(self.batch_max);
        while self.outcomes.recv_many(&mut batch, self.batch_max).await > 0 {
            apply(&self.store, &self.node_id, &batch).await;
            batch.clear();
        }
    }
}

/// Applies one batch of outcomes, retrying with backoff; gives up after [`APPLY_ATTEMPTS`].
async fn apply(store: &Store, node_id: &str, batch: &[Finish]) {
    let mut backoff = APPLY_BACKOFF;
    for attempt in 1..=APPLY_ATTEMPTS {
        let now = store.clock().now();
        match store.task_finish_many_if_running(batch, now, node_id).await {
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
