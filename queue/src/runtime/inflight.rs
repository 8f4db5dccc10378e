//! The tasks this node is running, each with its cancellation token and the reason the token
//! fired: the worker needs the reason to decide what the cancelled attempt means.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::task::Task;

/// Why a running task was told to stop. The first reason wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelReason {
    /// The node is shutting down: hand the task back.
    Shutdown,
    /// The component's timeout elapsed: a transient failure.
    TimedOut,
    /// The claim is gone (abandoned, rescued): discard whatever the worker has.
    LeaseLost,
    /// It gives its slot to another owner's waiting work (asked by [`RunningTask::ask_to_yield`]).
    Yield,
}

/// One running attempt.
#[derive(Debug)]
pub(crate) struct RunningTask {
    pub id: Uuid,
    pub lease_version: i64,
    /// Whose task it is and its priority, for taking turns (see `super::turns`).
    pub owner_id: Uuid,
    pub priority: i32,
    pub token: CancellationToken,
    reason: OnceLock<CancelReason>,
    yield_asked: AtomicBool,
}

impl RunningTask {
    /// Asks the task to give its slot up at its next batch boundary: there, and only there,
    /// its work stops with [`CancelReason::Yield`] (a task without batches runs on).
    pub fn ask_to_yield(&self) {
        self.yield_asked.store(true, Ordering::Relaxed);
    }

    pub fn yield_asked(&self) -> bool {
        self.yield_asked.load(Ordering::Relaxed)
    }

    pub fn cancel(&self, reason: CancelReason) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    pub fn reason(&self) -> Option<CancelReason> {
        self.reason.get().copied()
    }
}

/// The running attempts of this node, by task id.
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight {
    tasks: Arc<Mutex<HashMap<Uuid, Arc<RunningTask>>>>,
}

impl InFlight {
    /// Starts tracking the attempt of the claim `(task.id, task.lease_version)`.
    pub fn insert(&self, task: &Task) -> Arc<RunningTask> {
        self.insert_claim(task.id, task.lease_version, task.owner_id, task.priority)
    }

    fn insert_claim(
        &self,
        id: Uuid,
        lease_version: i64,
        owner_id: Uuid,
        priority: i32,
    ) -> Arc<RunningTask> {
        let running = Arc::new(RunningTask {
            id,
            lease_version,
            owner_id,
            priority,
            token: CancellationToken::new(),
            reason: OnceLock::new(),
            yield_asked: AtomicBool::new(false),
        });
        self.lock().insert(id, running.clone());
        running
    }

    pub fn remove(&self, running: &RunningTask) {
        let mut tasks = self.lock();
        if tasks
            .get(&running.id)
            .is_some_and(|current| current.lease_version == running.lease_version)
        {
            tasks.remove(&running.id);
        }
    }

    /// `(id, lease_version)` of every running attempt.
    pub fn claims(&self) -> Vec<(Uuid, i64)> {
        self.lock()
            .values()
            .map(|running| (running.id, running.lease_version))
            .collect()
    }

    /// Every running attempt, for taking turns.
    pub fn running(&self) -> Vec<Arc<RunningTask>> {
        self.lock().values().cloned().collect()
    }

    /// Cancels the attempt running `id` under `lease_version`, if it still is.
    pub fn cancel(&self, id: Uuid, lease_version: i64, reason: CancelReason) {
        if let Some(running) = self.lock().get(&id)
            && running.lease_version == lease_version
        {
            running.cancel(reason);
        }
    }

    pub fn cancel_all(&self, reason: CancelReason) {
        for running in self.lock().values() {
            running.cancel(reason);
        }
    }

    /// A node running tasks of `(owner, priority)`, for tests of taking turns.
    #[cfg(test)]
    pub fn running_for_owners(tasks: &[(u128, i32)]) -> Self {
        let inflight = InFlight::default();
        for &(owner, priority) in tasks {
            inflight.insert_claim(Uuid::now_v7(), 1, Uuid::from_u128(owner), priority);
        }
        inflight
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<RunningTask>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
