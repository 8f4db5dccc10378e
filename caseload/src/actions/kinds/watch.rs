//! `caseload.watch`: the run_as user's bookmarks on the target, set batch by batch;
//! idempotent, so a re-run batch changes nothing. A saved query's batch is used as the walk
//! read it, so its people are not read twice.

use bulkq_types::actions::ActionKind;
use bulkq_types::requests::{ScheduleRequest, WatchRequest};
use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};

use super::{BulkAction, NodeLimits};
use crate::actions::ActionsConfig;
use crate::actions::pace::SharedPace;
use crate::actions::spec::{RequestChecks, SubmitError, everyone};
use crate::actions::summary::StatusNames;
use crate::actions::target::Target;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::users::StaffUser;
use crate::watches::{watch, watch_targets};

pub(crate) struct Watch;

/// What a `caseload.watch` or `caseload.unwatch` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchSpec {
    pub target: Target,
}

impl BulkAction for Watch {
    const KIND: ActionKind = ActionKind::Watch;
    type Request = WatchRequest;
    type Spec = WatchSpec;

    async fn check<C: ConnectionTrait>(
        _db: &C,
        user: &StaffUser,
        request: WatchRequest,
        _limits: &NodeLimits,
    ) -> Result<(WatchSpec, ScheduleRequest), SubmitError> {
        check_watch_list_change(request, user, everyone())
    }

    fn target(spec: &WatchSpec) -> &Target {
        &spec.target
    }

    fn summary(_: &WatchSpec, people: &str, _: &StatusNames) -> String {
        format!("Watch {people}")
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        WatchExecutor {
            pace: pace(config.batch_size),
        }
    }
}

/// Checks a watch or unwatch request, whose only field is its target; `"all": true` means
/// `everyone`.
pub(super) fn check_watch_list_change(
    request: WatchRequest,
    user: &StaffUser,
    everyone: Target,
) -> Result<(WatchSpec, ScheduleRequest), SubmitError> {
    let mut checks = RequestChecks::new(&request.unknown, user);
    let schedule = checks.schedule(request.schedule);
    let target = checks.target(request.target, everyone);
    let spec = WatchSpec {
        target: checks.finish(target)?,
    };
    Ok((spec, schedule))
}

pub(crate) struct WatchExecutor {
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for WatchExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: WatchSpec = read_spec(ctx)?;
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let action = DatabaseChange::new(ActionKind::Watch, |step| {
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
