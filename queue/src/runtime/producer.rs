//! The producer claims due tasks for the free executor slots and starts a worker for each.
//!
//! Back-pressure comes from a semaphore with one permit per slot: the producer gathers the
//! free permits, starts a held task on each, and claims for the ones left over. With
//! nothing to claim it sleeps until a wake-up (an enqueue committed, here or, on
//! PostgreSQL, anywhere), the next known `run_at`, or the sweep interval, whichever comes
//! first.
//!
//! A claim may also take tasks beyond the free slots, up to `RuntimeConfig::prefetch` and as
//! many as the slots finish soon at the recent pace (see [`super::pace`]), and hold them
//! here: a slot that frees up starts a held task without a round trip to the database, and
//! claims (each a commit) come fewer and larger. Held tasks are claimed (EXECUTING) already,
//! so at shutdown they are handed back, and if the node dies they are rescued like the
//! running ones.
//!
//! Under a backlog of such short tasks a node on PostgreSQL that is the only one alive
//! claims ahead: the next claim goes out as soon as the last one is back, while the held
//! tasks start, so it may hold up to twice its prefetch. A claim of a thousand tasks takes
//! the database longer than the slots take to run them, and with claims only for free
//! slots those slots idled while it ran (ADR 0012). Still one claim at a time: a second
//! one beside it, of this node or another, skips past the rows the first has locked, which
//! cost the database more than the wait saved (`claim_ahead`). SQLite has one writer, so
//! a claim ahead there would only hold up the completions.
//!
//! Claims tell the database whose tasks the node has, so owners take turns; while every
//! slot is busy the producer also looks for other owners' waiting work and has a task of
//! the busiest owner yield its slot (see [`super::turns`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;
use uuid::Uuid;

use super::claim_ahead::ClaimAhead;
use super::turns;
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

/// What a claim comes back with: how many tasks it asked for, and what it got.
type ClaimResult = (usize, Result<Vec<Task>, QueueError>);

pub(crate) struct Producer {
    pub store: Store,
    pub worker: Worker,
    pub slots: Arc<Semaphore>,
    /// The number of permits `slots` was created with.
    pub workers: usize,
    /// The most claimed tasks held beyond the free slots (see the module documentation).
    pub prefetch: usize,
    /// Whether it may claim ahead under a backlog.
    pub claim_ahead: ClaimAhead,
    pub tracker: TaskTracker,
    pub sweep_interval: Duration,
    /// Whether owners take turns (see [`super::turns`]).
    pub owners_take_turns: bool,
    pub stop: CancellationToken,
}

impl Producer {
    pub async fn run(self) {
        let mut wake = self.store.events().wake_receiver();
        let mut held = VecDeque::new();
        let mut free = Vec::new();
        // The claim in flight, if any: never more than one.
        let mut claims = JoinSet::new();
        // The last claim found as many tasks as it asked for.
        let mut backlog = false;
        // After a failed claim: no claim before then, while held tasks still start.
        let mut resume_at: Option<Instant> = None;
        // While every slot is busy: when to look for other owners' waiting work.
        let mut next_look = Instant::now();
        while !self.stop.is_cancelled() {
            while let Ok(permit) = self.slots.clone().try_acquire_owned() {
                free.push(permit);
            }
            self.start(&mut held, &mut free);
            if backlog && held.is_empty() && claims.is_empty() && !free.is_empty() {
                let missing = self.workers.saturating_sub(free.len());
                free.extend(self.more_slots(missing).await);
            }
            let may_claim = claims.is_empty() && resume_at.is_none();
            if let Some(wanted) = self.wanted(held.len(), free.len(), may_claim, backlog) {
                // Anything enqueued after this point changes `wake` and ends a later wait.
                wake.borrow_and_update();
                claims.spawn(claim(
                    self.store.clone(),
                    self.worker.node_id.clone(),
                    wanted,
                    self.owners_take_turns.then(|| self.on_node(&held)),
                ));
            }
            let want_slot = !held.is_empty() || claims.is_empty();
            let full = self.owners_take_turns && free.is_empty() && held.is_empty();
            tokio::select! {
                biased;
                () = self.stop.cancelled() => break,
                Some(joined) = claims.join_next() => match joined {
                    Ok((asked, Ok(claimed))) => {
                        let began = !backlog && claimed.len() >= asked;
                        backlog = claimed.len() >= asked;
                        if began {
                            self.claim_ahead.refresh(&self.store).await;
                        }
                        held.extend(claimed);
                        self.start(&mut held, &mut free);
                        if !backlog && held.is_empty() {
                            self.wait_for_work(&mut wake).await;
                        }
                    }
                    Ok((_, Err(error))) => {
                        tracing::warn!(%error, "claiming tasks failed");
                        backlog = false;
                        resume_at = Some(Instant::now() + ERROR_BACKOFF);
                    }
                    Err(error) => {
                        tracing::error!(%error, "a claim did not finish");
                        backlog = false;
                        resume_at = Some(Instant::now() + ERROR_BACKOFF);
                    }
                },
                () = sleep_until(resume_at.unwrap_or_else(Instant::now)), if resume_at.is_some() => {
                    resume_at = None;
                }
                permit = self.slots.clone().acquire_owned(), if want_slot => match permit {
                    Ok(permit) => free.push(permit),
                    Err(_) => break,
                },
                () = sleep_until(next_look), if full => {
                    self.take_turns().await;
                    next_look = Instant::now() + turns::LOOK_INTERVAL;
                }
            }
        }
        // A claim in flight finishes, and its tasks start on the free slots as if it had
        // come back before the stop; the rest go back with the held tasks.
        while let Some(joined) = claims.join_next().await {
            if let Ok((_, Ok(claimed))) = joined {
                held.extend(claimed);
            }
        }
        self.start(&mut held, &mut free);
        self.hand_back(held).await;
    }

    /// How many tasks to claim now, if any and if it `may_claim` (no claim is in flight,
    /// none failed just now): for the free slots (none is free while `held` has tasks,
    /// which start first), or ahead under a backlog once no more than the node may hold
    /// are left.
    fn wanted(&self, held: usize, free: usize, may_claim: bool, backlog: bool) -> Option<usize> {
        if !may_claim {
            return None;
        }
        let holdable = self.worker.pace.holdable(self.workers, self.prefetch);
        let ahead = backlog && self.claim_ahead.allowed() && holdable > 0 && held <= holdable;
        (free > 0 || ahead).then_some(free + holdable)
    }

    /// Starts a worker on a free slot for each held task, while both last.
    fn start(&self, held: &mut VecDeque<Task>, free: &mut Vec<OwnedSemaphorePermit>) {
        while !held.is_empty() {
            let Some(permit) = free.pop() else { break };
            let Some(task) = held.pop_front() else { break };
            self.tracker.spawn(self.worker.clone().run(task, permit));
        }
    }

    /// The owners of the tasks this node runs or holds, and how many each: what a claim's
    /// turns count.
    fn on_node(&self, held: &VecDeque<Task>) -> Vec<(Uuid, i64)> {
        let mut owners: HashMap<Uuid, i64> = HashMap::new();
        let running = self.worker.inflight.running();
        let owner_ids = running.iter().map(|task| task.owner_id);
        for owner in owner_ids.chain(held.iter().map(|task| task.owner_id)) {
            *owners.entry(owner).or_default() += 1;
        }
        owners.into_iter().collect()
    }

    /// With every slot busy: asks running tasks to yield to other owners' waiting work, as
    /// [`turns::tasks_to_yield`] chooses them.
    async fn take_turns(&self) {
        let now = self.store.clock().now();
        let waiting = match self.store.task_owners_waiting(now).await {
            Ok(waiting) => waiting,
            Err(error) => {
                tracing::warn!(%error, "reading the owners with waiting tasks failed");
                return;
            }
        };
        let running = self.worker.inflight.running();
        let chosen = turns::tasks_to_yield(&running, &waiting);
        for task in running.iter().filter(|task| chosen.contains(&task.id)) {
            tracing::debug!(task = %task.id, "asked to yield its slot to another owner's work");
            task.ask_to_yield();
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

    /// With a backlog: the `missing` slots, or as many as free up within the cooldown.
    async fn more_slots(&self, missing: usize) -> Vec<OwnedSemaphorePermit> {
        let missing = u32::try_from(missing).unwrap_or(u32::MAX);
        if missing == 0 {
            return Vec::new();
        }
        let all = self.slots.clone().acquire_many_owned(missing);
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

/// Claims up to `max` due tasks for `node_id`, in the order they should start; taking
/// turns among owners when `on_node` says whose tasks the node has (see [`super::turns`]).
async fn claim(
    store: Store,
    node_id: Arc<str>,
    max: usize,
    on_node: Option<Vec<(Uuid, i64)>>,
) -> ClaimResult {
    let now = store.clock().now();
    let claimed = store
        .task_get_available(TaskGetAvailableParams {
            max: u32::try_from(max).unwrap_or(u32::MAX),
            now,
            node_id: &node_id,
            take_turns: on_node.is_some(),
            on_node: on_node.as_deref().unwrap_or_default(),
        })
        .instrument(tracing::debug_span!("claim", asked = max))
        .await;
    if let Ok(claimed) = &claimed {
        crate::metrics::claimed(claimed, now);
    }
    (max, claimed)
}
