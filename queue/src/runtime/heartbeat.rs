//! The heartbeat keeps this node's `queue_node` row fresh (so no other node rescues its
//! tasks) and checks that the node still holds the tasks it runs: an attempt whose task was
//! abandoned or rescued meanwhile has its cancellation token fired, so even an executor that
//! never commits a batch hears about it. It also keeps this store's entry among the
//! watchers of task changes while it has subscribers (see `store::watchers`), and looks
//! at whether other nodes are alive (see `claim_ahead`).

use std::time::Duration;

use super::claim_ahead::ClaimAhead;
use super::inflight::{CancelReason, InFlight};
use crate::error::QueueError;
use crate::store::{NodeIdentity, Store};

/// Default [`crate::RuntimeConfig::heartbeat_interval`]: a few round trips a minute per node;
/// also how soon a running task notices an admin's abandon at the latest.
pub const HEARTBEAT_INTERVAL_DEFAULT: Duration = Duration::from_secs(5);

pub(crate) struct Heartbeat {
    pub store: Store,
    pub node: NodeIdentity,
    pub inflight: InFlight,
    /// How long the watcher entry lasts past each heartbeat: several heartbeats.
    pub watch_ttl: Duration,
    /// Looked at again with every beat.
    pub claim_ahead: ClaimAhead,
}

/// What one heartbeat did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeartbeatOutcome {
    /// Running attempts whose claim turned out to be gone (now cancelled).
    pub lost: usize,
}

impl Heartbeat {
    pub async fn run_once(&self) -> Result<HeartbeatOutcome, QueueError> {
        let claims = self.inflight.claims();
        self.store
            .node_heartbeat(&self.node, claims.len(), self.store.clock().now())
            .await?;
        self.claim_ahead.refresh(&self.store).await;
        self.store.watch_refresh(self.watch_ttl).await?;
        let held = self.store.task_get_held(&claims).await?;
        let mut lost = 0;
        for (id, lease_version) in claims {
            if !held.contains(&id) {
                self.inflight
                    .cancel(id, lease_version, CancelReason::LeaseLost);
                lost += 1;
            }
        }
        Ok(HeartbeatOutcome { lost })
    }
}
