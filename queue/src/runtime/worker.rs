//! Runs one claimed task: finds its executor, runs it in its own tokio task (so a panic is
//! caught there and the process survives), enforces the timeout, and turns the result into
//! a [`Transition`] for the completer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::task::{JoinError, JoinHandle};
use tracing::Instrument;

use super::inflight::{CancelReason, InFlight};
use super::pace::Pace;
use crate::error::TaskError;
use crate::executor::{Registry, TaskContext};
use crate::state::{AttemptInfo, AttemptOutcome, Transition, after_attempt};
use crate::store::Store;
use crate::store::batch_budget::BatchBudget;
use crate::store::transition::Finish;
use crate::task::Task;

/// Everything a worker needs; cloned into each spawned worker.
#[derive(Clone)]
pub(crate) struct Worker {
    pub store: Store,
    pub registry: Arc<Registry>,
    pub inflight: InFlight,
    pub completions: mpsc::Sender<Finish>,
    /// How long a cancelled executor may take to stop before it is aborted.
    pub cancel_grace: Duration,
    pub node_id: Arc<str>,
    /// Where this node's execution times go, for the producer's prefetch.
    pub pace: Pace,
    /// The node's budget of open batches while people write.
    pub batches: BatchBudget,
}

impl Worker {
    /// Runs `task` while holding `permit` (its executor slot), then hands the outcome to the
    /// completer; an outcome for a lost claim is dropped here.
    pub async fn run(self, task: Task, permit: OwnedSemaphorePermit) {
        crate::metrics::slot_in_use(1.0);
        let span = tracing::info_span!(
            "execute",
            task = %task.id,
            component = %task.execution_component_name,
            attempt = task.attempt,
        );
        let finish = self.attempt(task).instrument(span).await;
        crate::metrics::slot_in_use(-1.0);
        drop(permit);
        if let Some(finish) = finish {
            // Fails only once the completer is gone, i.e. the runtime was torn down without
            // a shutdown; the task is then rescued like after a crash.
            if self.completions.send(finish).await.is_err() {
                tracing::warn!("completer gone; the outcome is left to the rescuer");
            }
        }
    }

    async fn attempt(&self, task: Task) -> Option<Finish> {
        let claim = AttemptInfo {
            task_id: task.id,
            attempt: task.attempt,
            max_attempts: task.max_attempts,
        };
        let finish = |transition| Finish {
            task_id: task.id,
            lease_version: task.lease_version,
            transition,
        };
        let Some(registered) = self.registry.get(&task.execution_component_name) else {
            let transition = Transition::Error {
                desc: format!(
                    "no executor is registered for component '{}' on node {}",
                    task.execution_component_name, self.node_id
                ),
            };
            crate::metrics::attempt_finished(
                &task.execution_component_name,
                Duration::ZERO,
                &transition,
            );
            return Some(finish(transition));
        };
        let (executor, config) = (registered.executor.clone(), registered.config.clone());
        if let Some(limit) = config.max_running
            && !self.take_place(&task, limit).await
        {
            // Every place is held elsewhere: back to the queue, its place and attempt kept;
            // the component is paused until a place frees.
            let now = self.store.clock().now();
            let transition = after_attempt(claim, &AttemptOutcome::Yielded, &config.retry, now);
            return Some(finish(transition));
        }
        let running = self.inflight.insert(&task);
        let mut ctx = TaskContext::new(
            self.store.clone(),
            task.clone(),
            running.clone(),
            self.batches.clone(),
        );
        let began = Instant::now();
        let mut handle = tokio::spawn(
            async move { executor.execute(&mut ctx).await }.instrument(tracing::Span::current()),
        );

        let joined = tokio::select! {
            joined = &mut handle => joined,
            () = tokio::time::sleep(config.timeout) => {
                running.cancel(CancelReason::TimedOut);
                self.stop(handle).await
            }
            () = running.token.cancelled() => self.stop(handle).await,
        };
        self.inflight.remove(&running);
        if let Some(limit) = config.max_running
            && let Err(error) = self.store.limit_place_release(&task, limit).await
        {
            tracing::warn!(%error, "releasing a running-limit place failed; the sweep frees it");
        }
        let took = began.elapsed();
        self.pace.record(took);

        let outcome = match (running.reason(), joined) {
            (Some(CancelReason::LeaseLost), _) => {
                tracing::info!(task = %task.id, "claim lost; the attempt's outcome is discarded");
                return None;
            }
            (_, Ok(Ok(()))) => AttemptOutcome::Succeeded,
            (_, Ok(Err(TaskError::Transient(error)))) => AttemptOutcome::Transient(error),
            (_, Ok(Err(TaskError::Permanent(error)))) => AttemptOutcome::Permanent(error),
            (Some(CancelReason::Shutdown), _) => AttemptOutcome::Interrupted,
            (Some(CancelReason::Yield), _) => AttemptOutcome::Yielded,
            (Some(CancelReason::TimedOut), _) => AttemptOutcome::TimedOut(config.timeout),
            (None, Ok(Err(TaskError::Cancelled))) => {
                AttemptOutcome::Transient("the executor cancelled itself".to_owned())
            }
            (None, Err(error)) => AttemptOutcome::Panicked(panic_message(error)),
        };
        let now = self.store.clock().now();
        let transition = after_attempt(claim, &outcome, &config.retry, now);
        crate::metrics::attempt_finished(&task.execution_component_name, took, &transition);
        Some(finish(transition))
    }

    /// Takes a place under the component's running limit; a store error counts as no place
    /// (the task waits its turn again rather than running over the limit).
    async fn take_place(&self, task: &Task, limit: u32) -> bool {
        self.store
            .limit_place_take(task, limit)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "taking a running-limit place failed");
                false
            })
    }

    /// Waits up to the cancel grace for a cancelled executor, then aborts it (dropping its
    /// open batch transaction, which rolls back).
    async fn stop(
        &self,
        mut handle: JoinHandle<Result<(), TaskError>>,
    ) -> Result<Result<(), TaskError>, JoinError> {
        match tokio::time::timeout(self.cancel_grace, &mut handle).await {
            Ok(joined) => joined,
            Err(_) => {
                handle.abort();
                handle.await
            }
        }
    }
}

/// The text a panicking executor panicked with.
fn panic_message(error: JoinError) -> String {
    if !error.is_panic() {
        return "the executor was aborted".to_owned();
    }
    let payload = error.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".to_owned())
}
