//! The rescuer takes tasks away from dead node incarnations (see
//! [`Store::task_rescue_many`]). It is a periodic job: each pass runs on one node of the
//! cluster. Its UPDATEs are guarded by status and lease as well, so even two passes at once
//! (a node's own pass at start-up, say) cannot rescue a task twice.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::QueueError;
use crate::periodic::{PeriodicContext, PeriodicTask};
use crate::store::{NodeIdentity, RescueOutcome, Store};

/// Default [`crate::RuntimeConfig::node_timeout`]: six missed heartbeats (at the default
/// interval) before a node counts as dead; long enough to ride out a GC-like pause or a slow
/// database, short enough that orphaned work restarts within a minute.
pub const NODE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);
/// Default [`crate::RuntimeConfig::rescue_interval`].
pub const RESCUE_INTERVAL_DEFAULT: Duration = Duration::from_secs(15);
/// Default [`crate::RuntimeConfig::park_after_crashes`]: one dead node can be bad luck (a
/// machine lost, a deployment), a second one running the same task is a pattern.
pub const PARK_AFTER_CRASHES_DEFAULT: i32 = 2;
/// The rescuer's periodic job.
pub(crate) const RESCUE_JOB: &str = "queue.rescue";

/// The oldest heartbeat that still counts as alive at `now`, for nodes that die after
/// `node_timeout` without one.
pub(super) fn alive_since(
    now: DateTime<Utc>,
    node_timeout: Duration,
) -> Result<DateTime<Utc>, QueueError> {
    let timeout = chrono::Duration::from_std(node_timeout)
        .map_err(|error| QueueError::Invalid(error.to_string()))?;
    Ok(now - timeout)
}

pub(crate) struct Rescuer {
    pub store: Store,
    pub node: NodeIdentity,
    pub node_timeout: Duration,
    pub park_after_crashes: i32,
}

impl Rescuer {
    pub async fn run_once(&self) -> Result<RescueOutcome, QueueError> {
        let now = self.store.clock().now();
        let cutoff = alive_since(now, self.node_timeout)?;
        let outcome = self
            .store
            .task_rescue_many(&self.node, cutoff, self.park_after_crashes, now)
            .await?;
        crate::metrics::rescued(outcome.retried.len(), outcome.failed.len());
        if !outcome.retried.is_empty() || !outcome.failed.is_empty() {
            tracing::info!(
                retried = outcome.retried.len(),
                failed = outcome.failed.len(),
                "rescued tasks of dead nodes"
            );
        }
        Ok(outcome)
    }
}

#[async_trait::async_trait]
impl PeriodicTask for Rescuer {
    async fn run(&self, _ctx: &PeriodicContext) -> Result<(), String> {
        self.run_once().await.map(drop).map_err(|e| e.to_string())
    }
}
