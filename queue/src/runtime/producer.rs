//! The producer claims due tasks for the free executor slots and starts a worker for each.
//!
//! Back-pressure comes from a semaphore with one permit per slot: the producer first waits
//! for one free permit, takes whatever else is free, and claims exactly that many. With
//! nothing to claim it sleeps until a wake-up (an enqueue committed, here or, on PostgreSQL,
//! anywhere), the next known `run_at`, or the sweep interval, whichever comes first.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::worker::Worker;
use crate::error::QueueError;
use crate::store::{Store, TaskGetAvailableParams};

/// The shortest sleep when due tasks exist but could not be claimed (another node is
/// claiming them right now): avoids spinning while their claims commit.
const MIN_POLL: Duration = Duration::from_millis(20);
/// Pause after a failed claim (database unreachable, say).
const ERROR_BACKOFF: Duration = Duration::from_secs(1);
/// With a backlog (the last claim filled every free slot), how long the producer waits for
/// all slots to free up before claiming again. Without it, slots freed one by one would be
/// refilled one by one, each claim costing a commit; with it, claims come in batches. Not
/// applied when the queue was drained, so a new task still starts at once.
const BACKLOG_COOLDOWN: Duration = Duration::from_millis(5);

pub(crate) struct Producer {
    pub store: Store,
    pub worker: Worker,
    pub slots: Arc<Semaphore>,
    /// The number of permits `slots` was created with.
    pub workers: usize,
    pub tracker: TaskTracker,
    pub sweep_interval: Duration,
    pub stop: CancellationToken,
}

/// What one claim round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProduceOutcome {
    pub asked: usize,
    pub claimed: usize,
}

impl Producer {
    pub async fn run(self) {
        let mut wake = self.store.wake_receiver();
        let mut backlog = false;
        loop {
            let first = tokio::select! {
                biased;
                () = self.stop.cancelled() => break,
                permit = self.slots.clone().acquire_owned() => permit,
            };
            let Ok(first) = first else { break };
            let mut permits = vec![first];
            if backlog {
                permits.extend(self.more_slots().await);
            }
            while let Ok(permit) = self.slots.clone().try_acquire_owned() {
                permits.push(permit);
            }
            // Anything enqueued after this point changes `wake` and ends the wait below.
            wake.borrow_and_update();
            backlog = false;
            match self.run_once(permits).await {
                Ok(outcome) if outcome.claimed < outcome.asked => {
                    self.wait_for_work(&mut wake).await
                }
                Ok(_) => backlog = true,
                Err(error) => {
                    tracing::warn!(%error, "claiming tasks failed");
                    tokio::select! {
                        () = self.stop.cancelled() => break,
                        () = tokio::time::sleep(ERROR_BACKOFF) => {}
                    }
                }
            }
        }
    }

    /// Claims (and starts) as many tasks as there are `permits` and spawns a worker for each
    /// with one permit; the unused permits are released.
    pub async fn run_once(
        &self,
        permits: Vec<OwnedSemaphorePermit>,
    ) -> Result<ProduceOutcome, QueueError> {
        let asked = permits.len();
        let node_id = &self.worker.node_id;
        let now = self.store.clock().now();
        let started = self
            .store
            .task_get_available(TaskGetAvailableParams {
                max: u32::try_from(asked).unwrap_or(u32::MAX),
                now,
                node_id,
            })
            .instrument(tracing::debug_span!("claim", asked))
            .await?;
        crate::metrics::claimed(&started, now);
        let claimed = started.len();
        for (task, permit) in started.into_iter().zip(permits) {
            self.tracker.spawn(self.worker.clone().run(task, permit));
        }
        Ok(ProduceOutcome { asked, claimed })
    }

    /// With a backlog: every other slot, or as many as free up within the cooldown.
    async fn more_slots(&self) -> Vec<OwnedSemaphorePermit> {
        let others = u32::try_from(self.workers.saturating_sub(1)).unwrap_or(u32::MAX);
        if others == 0 {
            return Vec::new();
        }
        let all = self.slots.clone().acquire_many_owned(others);
        match tokio::time::timeout(BACKLOG_COOLDOWN, all).await {
            Ok(Ok(mut permit)) => {
                // One permit per worker.
                let mut single = Vec::with_capacity(self.workers);
                while permit.num_permits() > 1 {
                    single.extend(permit.split(1));
                }
                single.push(permit);
                single
            }
            // Timed out (the permits gathered so far went back) or closed: take what is free.
            Ok(Err(_)) | Err(_) => Vec::new(),
        }
    }

    async fn wait_for_work(&self, wake: &mut watch::Receiver<u64>) {
        let now = self.store.clock().now();
        let nap = match self.store.task_next_run_at().await {
            Ok(Some(at)) => (at - now)
                .to_std()
                .unwrap_or(MIN_POLL)
                .clamp(MIN_POLL, self.sweep_interval),
            Ok(None) => self.sweep_interval,
            Err(error) => {
                tracing::warn!(%error, "reading the next run_at failed");
                self.sweep_interval
            }
        };
        tokio::select! {
            () = self.stop.cancelled() => {}
            changed = wake.changed() => {
                // The store keeps the sender alive as long as the producer holds the store.
                debug_assert!(changed.is_ok());
            }
            () = tokio::time::sleep(nap) => {}
        }
    }
}
