//! The pruner deletes finished tasks (with their history) once they are older than the
//! retention and the rows of long-dead nodes, compacts the counts by status and refreshes
//! SQLite's planner statistics where tables have changed much. Like the rescuer it is a
//! periodic job, run by one node per due time.

use std::time::Duration;

use crate::error::QueueError;
use crate::periodic::{PeriodicContext, PeriodicTask};
use crate::store::Store;

/// Default [`crate::RuntimeConfig::retention`]: a week of finished tasks stays visible.
pub const RETENTION_DEFAULT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Default [`crate::RuntimeConfig::prune_interval`].
pub const PRUNE_INTERVAL_DEFAULT: Duration = Duration::from_secs(600);
/// Rows deleted per statement: bounded so one prune never holds long locks.
const PRUNE_BATCH: u64 = 1000;

/// The pruner's periodic job.
pub(crate) const PRUNE_JOB: &str = "queue.prune";

pub(crate) struct Pruner {
    pub retention: Duration,
}

#[async_trait::async_trait]
impl PeriodicTask for Pruner {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let deleted = self.prune(&ctx.store).await.map_err(|e| e.to_string())?;
        if deleted > 0 {
            tracing::info!(deleted, "pruned finished tasks past their retention");
        }
        Ok(())
    }
}

impl Pruner {
    /// Returns how many tasks were deleted.
    async fn prune(&self, store: &Store) -> Result<u64, QueueError> {
        let retention = chrono::Duration::from_std(self.retention)
            .map_err(|error| QueueError::Invalid(error.to_string()))?;
        let cutoff = store.clock().now() - retention;
        let mut total = 0;
        loop {
            let deleted = store.task_prune(cutoff, PRUNE_BATCH).await?;
            total += deleted;
            if deleted < PRUNE_BATCH {
                break;
            }
        }
        store.node_prune(cutoff).await?;
        store.counts_compact(cutoff).await?;
        store.refresh_planner_statistics().await?;
        Ok(total)
    }
}
