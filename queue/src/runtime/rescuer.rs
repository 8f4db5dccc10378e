//! The rescuer takes tasks away from dead node incarnations (see
//! [`Store::task_rescue_many`]). It runs on every node: its UPDATEs are guarded by status, so
//! two nodes rescuing at once cannot rescue a task twice, and no leader is needed.

use std::time::Duration;

use crate::error::QueueError;
use crate::store::{NodeIdentity, RescueOutcome, Store};

/// Default [`crate::RuntimeConfig::node_timeout`]: six missed heartbeats (at the default
/// interval) before a node counts as dead; long enough to ride out a GC-like pause or a slow
/// database, short enough that orphaned work restarts within a minute.
pub const NODE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);
/// Default [`crate::RuntimeConfig::rescue_interval`].
pub const RESCUE_INTERVAL_DEFAULT: Duration = Duration::from_secs(15);

pub(crate) struct Rescuer {
    pub store: Store,
    pub node: NodeIdentity,
    pub node_timeout: Duration,
}

impl Rescuer {
    pub async fn run_once(&self) -> Result<RescueOutcome, QueueError> {
        let now = self.store.clock().now();
        let timeout = chrono::Duration::from_std(self.node_timeout)
            .map_err(|error| QueueError::Invalid(error.to_string()))?;
        let outcome = self
            .store
            .task_rescue_many(&self.node, now - timeout, now)
            .await?;
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
