//! `caseload.coach_reassignment`: moves the target to another coach, batch by batch, with
//! one `coach_change` row per person moved (never two, however often a batch is re-run),
//! then tells the new coach once, by email.

use bulkq_types::actions::ActionKind;
use bulkq_types::requests::{CoachReassignmentRequest, ScheduleRequest};
use bulkq_types::text::{Lines, control_character_problem};
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
use crate::actions::tell_coaches::tell_coaches;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::coach_notices::News;
use crate::coach_reassignment::{NewCoach, coach_name, find_new_coach, reassign, reassign_read};
use crate::email::Mailer;
use crate::users::StaffUser;

pub(crate) struct CoachReassignment;

/// What a `caseload.coach_reassignment` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoachReassignmentSpec {
    pub target: Target,
    pub to_coach: NewCoach,
    /// The name of the coach whose caseload a query target names, for the summary.
    pub from_coach: Option<String>,
    /// Who asked for the move, as the new coach's email names them.
    #[serde(default)]
    pub moved_by: String,
}

impl BulkAction for CoachReassignment {
    const KIND: ActionKind = ActionKind::CoachReassignment;
    type Request = CoachReassignmentRequest;
    type Spec = CoachReassignmentSpec;

    /// The new coach must be an enabled account (read through `db`).
    async fn check<C: ConnectionTrait>(
        db: &C,
        user: &StaffUser,
        request: CoachReassignmentRequest,
        _limits: &NodeLimits,
    ) -> Result<(CoachReassignmentSpec, ScheduleRequest), SubmitError> {
        let mut checks = RequestChecks::new(&request.unknown, user);
        let schedule = checks.schedule(request.schedule);
        let target = checks.target(request.target, everyone());
        // No username holds a control character, and PostgreSQL cannot even compare a NUL.
        let unreadable = control_character_problem(&request.to_coach, Lines::One);
        let to_coach = match unreadable {
            Some(problem) => {
                checks.add([("to_coach", problem)]);
                None
            }
            None => match find_new_coach(db, &request.to_coach).await {
                Ok(coach) => Some(coach),
                Err(CaseloadError::Invalid(problem)) => {
                    checks.add([("to_coach", problem)]);
                    None
                }
                Err(other) => return Err(other.into()),
            },
        };
        let from_coach = match &target {
            Some(Target::Query(filter)) => match filter.coach_id {
                Some(coach) => coach_name(db, coach).await?,
                None => None,
            },
            _ => None,
        };
        let target = checks.finish(target)?;
        // A missing coach was reported above, so the checks did not pass without one.
        let to_coach = to_coach.ok_or_else(|| {
            SubmitError::Invalid(vec![("to_coach".into(), "choose a coach".into())])
        })?;
        let spec = CoachReassignmentSpec {
            target,
            to_coach,
            from_coach,
            moved_by: user.display_name.clone(),
        };
        Ok((spec, schedule))
    }

    fn target(spec: &CoachReassignmentSpec) -> &Target {
        &spec.target
    }

    fn summary(spec: &CoachReassignmentSpec, people: &str, _: &StatusNames) -> String {
        let to = &spec.to_coach.display_name;
        match &spec.from_coach {
            Some(from) => format!("Move {people} from {from} to {to}"),
            None => format!("Move {people} to {to}"),
        }
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        CoachReassignmentExecutor {
            mailer: config.mailer.clone(),
            pace: pace(config.batch_size),
        }
    }
}

pub(crate) struct CoachReassignmentExecutor {
    pub mailer: Mailer,
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for CoachReassignmentExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: CoachReassignmentSpec = read_spec(ctx)?;
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let task_id = ctx.task_id();
        let to_coach = spec.to_coach.id;
        let action = DatabaseChange::new(ActionKind::CoachReassignment, |step| {
            Box::pin(async move {
                let (txn, actor, now) = (&*step.txn, &step.actor, Utc::now());
                match step.batch.read_people() {
                    Some(read) => reassign_read(txn, task_id, actor, to_coach, read, now).await,
                    None => reassign(txn, task_id, actor, to_coach, &step.batch.ids, now).await,
                }
            })
        });
        walk.run(ctx, &action).await?;
        let details = format!("Moved by {}.", spec.moved_by);
        tell_coaches(ctx, &mut walk, &self.mailer, News::NewPeople, &details).await
    }
}
