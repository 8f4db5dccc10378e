//! The tasks this node is running, each with its cancellation token and the reason the token
//! fired: the worker needs the reason to decide what the cancelled attempt means.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Why a running task was told to stop. The first reason wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelReason {
    /// The node is shutting down: hand the task back.
    Shutdown,
    /// The component's timeout elapsed: a transient failure.
    TimedOut,
    /// The claim is gone (abandoned, rescued): discard whatever the worker has.
    LeaseLost,
}

/// One running attempt.
#[derive(Debug)]
pub(crate) struct RunningTask {
    pub id: Uuid,
    pub lease_version: i64,
    pub token: CancellationToken,
    reason: OnceLock<CancelReason>,
}

impl RunningTask {
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
    pub fn insert(&self, id: Uuid, lease_version: i64) -> Arc<RunningTask> {
        let running = Arc::new(RunningTask {
            id,
            lease_version,
            token: CancellationToken::new(),
            reason: OnceLock::new(),
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<RunningTask>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
