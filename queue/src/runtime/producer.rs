//! The producer claims due tasks for the free executor slots and starts a worker for each.
//!
//! Back-pressure comes from a semaphore with one permit per slot: the producer first waits
//! for one free permit, takes whatever else is free, and claims exactly that many. With
//! nothing to claim it sleeps until a wake-up (an enqueue committed, here or, on PostgreSQL,
//! anywhere), the next known `run_at`, or the sweep interval, whichever comes first.
//!
//! A claim may also take tasks beyond the free slots, up to `RuntimeConfig::prefetch` and as
//! many as the slots finish soon at the recent pace (see [`super::pace`]), and hold them
//! here: a slot that frees up starts a held task without a round trip to the database, and
//! claims (each a commit) come fewer and larger. Held tasks are claimed (EXECUTING) already,
//! so at shutdown they are handed back, and if the node dies they are rescued like the
//! running ones.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::worker::Worker;
use crate::error::QueueError;
use crate::state::Transition;
use crate::store::transition::Finish;
use crate::store::{Store, TaskGetAvailableParams};
use crate::task::Task;

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
    /// The most claimed tasks held beyond the free slots (see the module documentation).
    pub prefetch: usize,
    pub tracker: TaskTracker,
    pub sweep_interval: Duration,
    pub stop: CancellationToken,
}

impl Producer {
    pub async fn run(self) {
        let mut wake = self.store.events().wake_receiver();
        let mut held = VecDeque::new();
        let mut backlog = false;
        loop {
            let first = tokio::select! {
                biased;
                () = self.stop.cancelled() => break,
                permit = self.slots.clone().acquire_owned() => permit,
            };
            let Ok(first) = first else { break };
            let mut permits = vec![first];
            if backlog && held.is_empty() {
                permits.extend(self.more_slots().await);
            }
            while let Ok(permit) = self.slots.clone().try_acquire_owned() {
                permits.push(permit);
            }
            if held.len() >= permits.len() {
                self.start(&mut held, permits);
                continue;
            }
            // Anything enqueued after this point changes `wake` and ends the wait below.
            wake.borrow_and_update();
            backlog = false;
            let holdable = self.worker.pace.holdable(self.workers, self.prefetch);
            let wanted = permits.len() - held.len() + holdable;
            match self.claim(wanted).await {
                Ok(claimed) => {
                    let drained = claimed.len() < wanted;
                    held.extend(claimed);
                    self.start(&mut held, permits);
                    match drained {
                        true if held.is_empty() => self.wait_for_work(&mut wake).await,
                        true => {}
                        false => backlog = true,
                    }
                }
                Err(error) => {
                    self.start(&mut held, permits);
                    tracing::warn!(%error, "claiming tasks failed");
                    tokio::select! {
                        () = self.stop.cancelled() => break,
                        () = tokio::time::sleep(ERROR_BACKOFF) => {}
                    }
                }
            }
        }
        self.hand_back(held).await;
    }

    /// Claims up to `max` due tasks, in the order they should start.
    async fn claim(&self, max: usize) -> Result<Vec<Task>, QueueError> {
        let now = self.store.clock().now();
        let claimed = self
            .store
            .task_get_available(TaskGetAvailableParams {
                max: u32::try_from(max).unwrap_or(u32::MAX),
                now,
                node_id: &self.worker.node_id,
            })
            .instrument(tracing::debug_span!("claim", asked = max))
            .await?;
        crate::metrics::claimed(&claimed, now);
        Ok(claimed)
    }

    /// Spawns a worker for each permit while `held` has tasks; unused permits are released.
    fn start(&self, held: &mut VecDeque<Task>, permits: Vec<OwnedSemaphorePermit>) {
        for permit in permits {
            let Some(task) = held.pop_front() else { break };
            self.tracker.spawn(self.worker.clone().run(task, permit));
        }
    }

    /// At shutdown: the held tasks go back to QUEUED without spending an attempt, through
    /// the completer like the outcomes of interrupted ones.
    async fn hand_back(&self, held: VecDeque<Task>) {
        for task in held {
            let finish = Finish {
                task_id: task.id,
                lease_version: task.lease_version,
                transition: Transition::HandBack,
            };
            if self.worker.completions.send(finish).await.is_err() {
                tracing::warn!("completer gone; held tasks are left to the rescuer");
                return;
            }
        }
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
