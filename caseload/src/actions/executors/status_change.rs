//! `caseload.program_status_change`: moves the target to a new status, batch by batch, with
//! one history row per person changed (never two, however often a batch is re-run).

use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};

use crate::actions::pace::SharedPace;
use crate::actions::spec::StatusChangeSpec;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::status_change::change_status;

pub(crate) struct StatusChangeExecutor {
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for StatusChangeExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: StatusChangeSpec = read_spec(ctx)?;
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let task_id = ctx.task_id();
        let action = DatabaseChange::new(|step| {
            // The future may borrow only its step, so it takes its own copy of the change.
            let change = spec.change.clone();
            Box::pin(async move {
                let ids = &step.batch.ids;
                change_status(&*step.txn, task_id, &step.actor, &change, ids, Utc::now()).await
            })
        });
        walk.run(ctx, &action).await
    }
}
