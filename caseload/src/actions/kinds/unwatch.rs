//! `caseload.unwatch`: the run_as user's bookmarks on the target, cleared batch by batch;
//! idempotent, so a re-run batch changes nothing. `"all": true` clears the user's whole
//! watch list.

use bulkq_types::actions::ActionKind;
use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::{ScheduleRequest, UnwatchRequest};
use queue::{TaskContext, TaskError, TaskExecutor};
use sea_orm::ConnectionTrait;

use super::watch::{WatchSpec, check_watch_list_change};
use super::{BulkAction, NodeLimits};
use crate::actions::ActionsConfig;
use crate::actions::pace::SharedPace;
use crate::actions::spec::SubmitError;
use crate::actions::summary::StatusNames;
use crate::actions::target::Target;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::users::StaffUser;
use crate::watches::{unwatch, unwatch_targets};

pub(crate) struct Unwatch;

impl BulkAction for Unwatch {
    const KIND: ActionKind = ActionKind::Unwatch;
    type Request = UnwatchRequest;
    type Spec = WatchSpec;

    async fn check<C: ConnectionTrait>(
        _db: &C,
        user: &StaffUser,
        request: UnwatchRequest,
        _limits: &NodeLimits,
    ) -> Result<(WatchSpec, ScheduleRequest), SubmitError> {
        let my_watch_list = Target::Query(PersonFilter {
            watched_by: Some(user.id),
            ..PersonFilter::default()
        });
        check_watch_list_change(request, user, my_watch_list)
    }

    fn target(spec: &WatchSpec) -> &Target {
        &spec.target
    }

    fn summary(_: &WatchSpec, people: &str, _: &StatusNames) -> String {
        format!("Unwatch {people}")
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        UnwatchExecutor {
            pace: pace(config.batch_size),
        }
    }
}

pub(crate) struct UnwatchExecutor {
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for UnwatchExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: WatchSpec = read_spec(ctx)?;
        // Clearing one's own bookmark affects nobody else, so a query may reach people
        // outside the run_as scope (e.g. someone reassigned since they were watched).
        let mut walk: Walk<()> = Walk::resume(ctx, spec.target, Reach::Anyone, self.pace.clone())?;
        let action = DatabaseChange::new(ActionKind::Unwatch, |step| {
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
