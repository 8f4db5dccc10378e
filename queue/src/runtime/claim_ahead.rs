//! Whether this node's producer may claim ahead (see `producer`): on PostgreSQL, while no
//! node of another system is alive. Claims of several nodes at once already skip past each
//! other's locked rows, and with a claim always in flight on each of them that skipping
//! cost the database more than the wait it saved (ADR 0012).
//!
//! The heartbeat looks again at every beat, and the producer whenever a backlog begins, so
//! a node that joins is noticed before the backlog it shares, not a heartbeat later.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::DbBackend;

use super::rescuer::alive_since;
use crate::error::QueueError;
use crate::store::{NodeIdentity, Store};

#[derive(Clone)]
pub(crate) struct ClaimAhead {
    alone: Arc<AtomicBool>,
    node: Arc<NodeIdentity>,
    /// A node whose heartbeat is older than this is dead.
    node_timeout: Duration,
}

impl ClaimAhead {
    /// For `node`, not claiming ahead until the first look.
    pub fn new(node: NodeIdentity, node_timeout: Duration) -> Self {
        Self {
            alone: Arc::new(AtomicBool::new(false)),
            node: Arc::new(node),
            node_timeout,
        }
    }

    pub fn allowed(&self) -> bool {
        self.alone.load(Ordering::Relaxed)
    }

    /// Looks at the nodes alive now; if that fails, the node goes on as it was. SQLite
    /// never claims ahead, so there is nothing to look at.
    pub async fn refresh(&self, store: &Store) {
        if store.backend() != DbBackend::Postgres {
            return;
        }
        match self.others_alive(store).await {
            Ok(others) => self.alone.store(others == 0, Ordering::Relaxed),
            Err(error) => tracing::warn!(%error, "counting the nodes alive failed"),
        }
    }

    async fn others_alive(&self, store: &Store) -> Result<u64, QueueError> {
        let cutoff = alive_since(store.clock().now(), self.node_timeout)?;
        store.node_count_others_alive(&self.node, cutoff).await
    }
}
