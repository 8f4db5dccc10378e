//! `caseload.early_alert`: raises an alert for each targeted person, batch by batch (one per
//! person per task, however often a batch is re-run), then tells each coach of those people
//! once, by email.

use bulkq_types::actions::ActionKind;
use bulkq_types::alerts::AlertContent;
use bulkq_types::requests::{EarlyAlertRequest, ScheduleRequest};
use bulkq_types::words::quoted;
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
use crate::actions::tell_coaches::tell_coaches;
use crate::actions::walk::{DatabaseChange, Reach, Walk, read_spec};
use crate::coach_notices::News;
use crate::early_alerts::{check_reasons, raise, raise_for_read, reasons};
use crate::email::Mailer;
use crate::users::StaffUser;

pub(crate) struct EarlyAlert;

/// What a `caseload.early_alert` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlyAlertSpec {
    pub target: Target,
    pub alert: AlertContent,
    /// The reasons' names when it was submitted, for its summary and the coaches' email.
    pub reason_names: Vec<String>,
}

impl BulkAction for EarlyAlert {
    const KIND: ActionKind = ActionKind::EarlyAlert;
    type Request = EarlyAlertRequest;
    type Spec = EarlyAlertSpec;

    /// Every reason must be one in use (read through `db`).
    async fn check<C: ConnectionTrait>(
        db: &C,
        user: &StaffUser,
        request: EarlyAlertRequest,
        _limits: &NodeLimits,
    ) -> Result<(EarlyAlertSpec, ScheduleRequest), SubmitError> {
        let mut checks = RequestChecks::new(&request.unknown, user);
        let schedule = checks.schedule(request.schedule);
        let target = checks.target(request.target, everyone());
        let alert = request.alert;
        let problems = alert.problems();
        // Only well-formed codes are looked up.
        let reasons_ok = problems.iter().all(|(name, _)| *name != "reasons");
        checks.add(problems);
        if reasons_ok && let Err(problem) = check_reasons(db, &alert.reasons).await? {
            checks.add([("reasons", problem)]);
        }
        let target = checks.finish(target)?;
        let names = reasons(db, false).await?;
        let reason_names = alert
            .reasons
            .iter()
            .filter_map(|code| names.iter().find(|reason| &reason.code == code))
            .map(|reason| reason.name.clone())
            .collect();
        let spec = EarlyAlertSpec {
            target,
            alert,
            reason_names,
        };
        Ok((spec, schedule))
    }

    fn target(spec: &EarlyAlertSpec) -> &Target {
        &spec.target
    }

    fn summary(spec: &EarlyAlertSpec, people: &str, _: &StatusNames) -> String {
        let reasons = quoted(&spec.reason_names.join(", "));
        format!("Raise an early alert for {people}: {reasons}")
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        EarlyAlertExecutor {
            mailer: config.mailer.clone(),
            pace: pace(config.batch_size),
        }
    }
}

impl EarlyAlertSpec {
    /// What the coaches' email says of the alert, after the list of their people.
    fn details(&self) -> String {
        let mut details = format!(
            "Course or term: {}\nReasons: {}",
            self.alert.course.trim(),
            self.reason_names.join(", ")
        );
        for (label, text) in [
            ("Suggestion", &self.alert.suggestion),
            ("Comment", &self.alert.comment),
        ] {
            if !text.trim().is_empty() {
                details.push_str(&format!("\n{label}: {}", text.trim()));
            }
        }
        details
    }
}

pub(crate) struct EarlyAlertExecutor {
    pub mailer: Mailer,
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for EarlyAlertExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: EarlyAlertSpec = read_spec(ctx)?;
        let details = spec.details();
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let task_id = ctx.task_id();
        let action = DatabaseChange::new(ActionKind::EarlyAlert, |step| {
            // The future may borrow only its step, so it takes its own copy of the alert.
            let alert = spec.alert.clone();
            Box::pin(async move {
                let (txn, actor, now) = (&*step.txn, &step.actor, Utc::now());
                match &step.batch.rows {
                    Some(rows) => {
                        let people: Vec<_> =
                            rows.iter().map(|row| (row.id, row.coach_id)).collect();
                        raise_for_read(txn, task_id, actor, &alert, &people, now).await
                    }
                    None => raise(txn, task_id, actor, &alert, &step.batch.ids, now).await,
                }
            })
        });
        walk.run(ctx, &action).await?;
        tell_coaches(ctx, &mut walk, &self.mailer, News::EarlyAlerts, &details).await
    }
}
