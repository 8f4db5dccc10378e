//! `caseload.program_status_change`: moves the target to a new status, batch by batch, with
//! one history row per person changed (never two, however often a batch is re-run).

use bulkq_types::actions::ActionKind;
use bulkq_types::requests::{ScheduleRequest, StatusChangeRequest};
use chrono::Utc;
use queue::{TaskContext, TaskError, TaskExecutor};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};

use super::{BulkAction, NodeLimits};
use crate::CaseloadError;
use crate::actions::ActionsConfig;
use crate::actions::pace::SharedPace;
use crate::actions::spec::{RequestChecks, SubmitError, everyone};
use crate::actions::summary::StatusNames;
use crate::actions::target::Target;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::status_change::{self, change_status, change_status_of_read};
use crate::statuses::require_status;
use crate::users::StaffUser;

pub(crate) struct StatusChange;

/// What a `caseload.program_status_change` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChangeSpec {
    pub target: Target,
    pub change: status_change::StatusChange,
}

impl BulkAction for StatusChange {
    const KIND: ActionKind = ActionKind::ProgramStatusChange;
    type Request = StatusChangeRequest;
    type Spec = StatusChangeSpec;

    /// The status must exist (read through `db`).
    async fn check<C: ConnectionTrait>(
        db: &C,
        user: &StaffUser,
        request: StatusChangeRequest,
        _limits: &NodeLimits,
    ) -> Result<(StatusChangeSpec, ScheduleRequest), SubmitError> {
        let mut checks = RequestChecks::new(&request.unknown, user);
        let schedule = checks.schedule(request.schedule);
        let target = checks.target(request.target, everyone());
        let change = status_change::StatusChange {
            to_status: request.to_status,
            reason: request.reason,
        };
        let problems = change.problems();
        // Only a well-formed code is looked up (a NUL, say, is an error on PostgreSQL).
        let to_status_ok = problems.iter().all(|(name, _)| *name != "to_status");
        checks.add(problems);
        if to_status_ok {
            match require_status(db, &change.to_status).await {
                Ok(()) => {}
                Err(CaseloadError::UnknownStatus(code)) => {
                    checks.add([("to_status", format!("no program status is called {code:?}"))])
                }
                Err(other) => return Err(other.into()),
            }
        }
        let spec = StatusChangeSpec {
            target: checks.finish(target)?,
            change,
        };
        Ok((spec, schedule))
    }

    fn target(spec: &StatusChangeSpec) -> &Target {
        &spec.target
    }

    fn summary(spec: &StatusChangeSpec, people: &str, statuses: &StatusNames) -> String {
        let status = statuses.name(&spec.change.to_status);
        format!("Change status of {people} to {status}")
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        StatusChangeExecutor {
            pace: pace(config.batch_size),
        }
    }
}

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
        let action = DatabaseChange::new(ActionKind::ProgramStatusChange, |step| {
            // The future may borrow only its step, so it takes its own copy of the change.
            let change = spec.change.clone();
            Box::pin(async move {
                let (txn, actor, now) = (&*step.txn, &step.actor, Utc::now());
                match step.batch.read_people() {
                    Some(read) => {
                        change_status_of_read(txn, task_id, actor, &change, read, now).await
                    }
                    None => change_status(txn, task_id, actor, &change, &step.batch.ids, now).await,
                }
            })
        });
        walk.run(ctx, &action).await
    }
}
