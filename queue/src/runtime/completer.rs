//! Batched completion: workers' outcomes are applied in one transaction per batch. A commit is
//! the expensive part of a transition (an fsync on SQLite), so whatever has finished while the
//! previous batch committed goes into the next one. No waiting for a batch to fill up: a
//! lone outcome is applied at once.

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
            self.apply(&batch).await;
            batch.clear();
        }
    }

    async fn apply(&self, batch: &[Finish]) {
        let mut backoff = APPLY_BACKOFF;
        for attempt in 1..=APPLY_ATTEMPTS {
            let now = self.store.clock().now();
            match self
                .store
                .task_finish_many_if_running(batch, now, &self.node_id)
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
}
