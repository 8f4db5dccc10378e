//! `caseload.program_status_change`: moves the target to a new status, batch by batch, with
//! one history row per person changed (never two, however often a batch is re-run).

use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};

use crate::actions::spec::StatusChangeSpec;
use crate::actions::walk::{Reach, Walk, read_spec, task_error};
use crate::status_change::change_status;

pub(crate) struct StatusChangeExecutor {
    pub batch_size: u64,
}

#[async_trait::async_trait]
impl TaskExecutor for StatusChangeExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: StatusChangeSpec = read_spec(ctx)?;
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.batch_size)?;
        while let Some(step) = walk.next(ctx).await? {
            let report = change_status(
                &*step.txn,
                ctx.task_id(),
                &step.actor,
                &spec.change,
                &step.batch.ids,
                Utc::now(),
            )
            .await
            .map_err(task_error)?;
            walk.progress.report.add(&report);
            walk.commit(ctx, step.txn).await?;
        }
        Ok(())
    }
}
