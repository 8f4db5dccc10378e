//! `caseload.watch` and `caseload.unwatch`: the run_as user's bookmarks on the target,
//! set or cleared batch by batch; both are idempotent, so a re-run batch changes nothing.

use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};

use crate::actions::pace::SharedPace;
use crate::actions::spec::WatchSpec;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::watches::{unwatch, watch};

pub(crate) struct WatchExecutor {
    pub pace: SharedPace,
}

pub(crate) struct UnwatchExecutor {
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for WatchExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: WatchSpec = read_spec(ctx)?;
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let action = DatabaseChange::new(|step| {
            Box::pin(watch(&*step.txn, &step.actor, &step.batch.ids, Utc::now()))
        });
        walk.run(ctx, &action).await
    }
}

#[async_trait::async_trait]
impl TaskExecutor for UnwatchExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: WatchSpec = read_spec(ctx)?;
        // Clearing one's own bookmark affects nobody else, so a query may reach people
        // outside the run_as scope (e.g. someone reassigned since they were watched).
        let mut walk: Walk<()> = Walk::resume(ctx, spec.target, Reach::Anyone, self.pace.clone())?;
        let action =
            DatabaseChange::new(|step| Box::pin(unwatch(&*step.txn, &step.actor, &step.batch.ids)));
        walk.run(ctx, &action).await
    }
}
