//! The periodic job that frees the running-limit places of tasks that moved on and lifts
//! the limit's pause to match (`store::limits`): a node that died holding places releases
//! nothing itself.

use std::time::Duration;

use crate::periodic::{PeriodicContext, PeriodicTask};

/// The job's name in the scheduler.
pub(crate) const LIMIT_SWEEP_JOB: &str = "queue.running_limits";
/// How often it looks: a place a dead node held is free once the rescuer has taken its task
/// back, and used again within this long.
pub(crate) const LIMIT_SWEEP_EVERY: Duration = Duration::from_secs(5);

/// The limited components and their limits.
pub(crate) struct LimitSweep {
    pub limits: Vec<(String, u32)>,
}

#[async_trait::async_trait]
impl PeriodicTask for LimitSweep {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        for (component, limit) in &self.limits {
            ctx.store
                .limit_sweep(component, *limit)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}
