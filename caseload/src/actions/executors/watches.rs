//! `caseload.watch` and `caseload.unwatch`: the run_as user's bookmarks on the target,
//! set or cleared batch by batch; both are idempotent, so a re-run batch changes nothing.
//! A saved query's batch is used as the walk read it, so its people are not read twice.

use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};

use crate::actions::pace::SharedPace;
use crate::actions::spec::WatchSpec;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::watches::{unwatch, unwatch_targets, watch, watch_targets};

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
            Box::pin(async move {
                let (txn, actor) = (&*step.txn, &step.actor);
                match step.batch.known_targets() {
                    Some(targets) => watch_targets(txn, actor, &targets, Utc::now()).await,
                    None => watch(txn, actor, &step.batch.ids, Utc::now()).await,
                }
            })
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
        let action = DatabaseChange::new(|step| {
            Box::pin(async move {
                let (txn, actor) = (&*step.txn, &step.actor);
                match step.batch.known_targets() {
                    Some(targets) => unwatch_targets(txn, actor, &targets).await,
                    None => unwatch(txn, actor, &step.batch.ids).await,
                }
            })
        });
        walk.run(ctx, &action).await
    }
}
