//! The pruner deletes finished tasks (with their history) once they are older than the
//! retention, and the rows of long-dead nodes. Like the rescuer it runs on every node;
//! deleting what another node already deleted is harmless.

use std::time::Duration;

use crate::error::QueueError;
use crate::store::Store;

/// Default [`crate::RuntimeConfig::retention`]: a week of finished tasks stays visible.
pub const RETENTION_DEFAULT: Duration = Duration::from_secs(7 * 24 * 3600);
/// Default [`crate::RuntimeConfig::prune_interval`].
pub const PRUNE_INTERVAL_DEFAULT: Duration = Duration::from_secs(600);
/// Rows deleted per statement: bounded so one prune never holds long locks.
const PRUNE_BATCH: u64 = 1000;

pub(crate) struct Pruner {
    pub store: Store,
    pub retention: Duration,
}

impl Pruner {
    /// Returns how many tasks were deleted.
    pub async fn run_once(&self) -> Result<u64, QueueError> {
        let retention = chrono::Duration::from_std(self.retention)
            .map_err(|error| QueueError::Invalid(error.to_string()))?;
        let cutoff = self.store.clock().now() - retention;
        let mut total = 0;
        loop {
            let deleted = self.store.task_prune(cutoff, PRUNE_BATCH).await?;
            total += deleted;
            if deleted < PRUNE_BATCH {
                break;
            }
        }
        self.store.node_prune(cutoff).await?;
        Ok(total)
    }
}
