//! The bulk actions as requested and as enqueued: each action's request (what the JSON API
//! and the dashboard accept), its validation, and the spec stored in the task.
//!
//! Validation happens before anything is enqueued and reports every bad field at once, so
//! a task that exists was well-formed when submitted; executors check again only what can
//! change in between (a status deleted, the run_as user removed).

use std::collections::HashSet;

use bulkq_types::actions::ActionKind;
use bulkq_types::export::{ALL_COLUMNS, ExportColumn};
use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::{
    EmailRequest, ExportRequest, FieldErrors, MAX_PRIORITY, MAX_SCHEDULE_AHEAD_DAYS,
    ScheduleRequest, StatusChangeRequest, TargetRequest, UnknownFields, WatchRequest,
};
use chrono::Utc;
use queue::NewTask;
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::target::{MAX_TARGET_IDS, Target};
use crate::CaseloadError;
use crate::email::EmailContent;
use crate::export::{DEFAULT_ROW_CAP, ExportOptions};
use crate::status_change::StatusChange;
use crate::statuses::require_status;
use crate::users::StaffUser;

/// Why a request was not enqueued.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The request's fields are wrong; nothing was enqueued.
    #[error("invalid request: {}", describe(.0))]
    Invalid(FieldErrors),
    /// The idempotency key was sent before with another request; nothing was enqueued.
    #[error("the idempotency key was already used for a different request")]
    KeyReused,
    #[error(transparent)]
    Caseload(#[from] CaseloadError),
    #[error(transparent)]
    Queue(queue::QueueError),
}

fn describe(errors: &FieldErrors) -> String {
    errors
        .iter()
        .map(|(field, message)| format!("{field}: {message}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The target to store; `everyone` is what `"all": true` means for the action.
fn resolve_target(
    request: TargetRequest,
    everyone: Target,
    errors: &mut FieldErrors,
) -> Option<Target> {
    match (request.ids, request.query, request.all == Some(true)) {
        (Some(ids), None, false) => resolve_ids(ids, errors),
        (None, Some(filter), false) => {
            let problems = filter.problems();
            errors.extend(
                problems
                    .iter()
                    .map(|(name, message)| field("query", format!("{name}: {message}"))),
            );
            problems.is_empty().then_some(Target::Query(filter))
        }
        (None, None, true) => Some(everyone),
        (None, None, false) => {
            errors.push(field(
                "ids",
                "choose people: give ids, a query, or \"all\": true",
            ));
            None
        }
        _ => {
            errors.push(field(
                "ids",
                "give one of ids, query or \"all\": true, not several",
            ));
            None
        }
    }
}

/// A field error for each unknown field.
fn unknown_field_errors(unknown: &UnknownFields, errors: &mut FieldErrors) {
    errors.extend(
        unknown
            .keys()
            .map(|name| field(name, "unknown field; check its spelling")),
    );
}

/// The schedule, with a field error for each value out of range.
fn checked_schedule(schedule: ScheduleRequest, errors: &mut FieldErrors) -> ScheduleRequest {
    let window = chrono::Duration::days(MAX_SCHEDULE_AHEAD_DAYS);
    if let Some(run_at) = schedule.run_at {
        let now = Utc::now();
        if run_at > now + window {
            let problem = format!("at most {MAX_SCHEDULE_AHEAD_DAYS} days ahead");
            errors.push(field("run_at", problem));
        } else if run_at < now - window {
            // Past times mean "now"; one from long ago is a mistake (and some are out of
            // the databases' range).
            let problem = format!("at most {MAX_SCHEDULE_AHEAD_DAYS} days in the past");
            errors.push(field("run_at", problem));
        }
    }
    if let Some(priority) = schedule.priority
        && !(-MAX_PRIORITY..=MAX_PRIORITY).contains(&priority)
    {
        errors.push(field(
            "priority",
            format!("from -{MAX_PRIORITY} to {MAX_PRIORITY}"),
        ));
    }
    schedule
}

/// Drops repeated ids (keeping the first) so a person is acted on once.
fn resolve_ids(ids: Vec<Uuid>, errors: &mut FieldErrors) -> Option<Target> {
    if ids.is_empty() {
        errors.push(field("ids", "name at least one person"));
        return None;
    }
    if ids.len() > MAX_TARGET_IDS {
        errors.push(field(
            "ids",
            format!(
                "at most {MAX_TARGET_IDS} ids per request ({} given); use a query for more",
                ids.len()
            ),
        ));
        return None;
    }
    let mut seen = HashSet::with_capacity(ids.len());
    Some(Target::Ids(
        ids.into_iter().filter(|id| seen.insert(*id)).collect(),
    ))
}

fn field(name: &str, message: impl Into<String>) -> (String, String) {
    (name.to_owned(), message.into())
}

/// What a `caseload.export` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportSpec {
    pub target: Target,
    pub columns: Vec<ExportColumn>,
    pub row_cap: u64,
}

/// What a `caseload.program_status_change` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChangeSpec {
    pub target: Target,
    pub change: StatusChange,
}

/// What a `caseload.watch` or `caseload.unwatch` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchSpec {
    pub target: Target,
}

/// What a `caseload.email` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailSpec {
    pub target: Target,
    pub content: EmailContent,
}

/// Validates an export request; `max_row_cap` is the server's configured limit.
pub fn export_task(
    user: &StaffUser,
    request: ExportRequest,
    max_row_cap: u64,
) -> Result<NewTask, SubmitError> {
    let mut errors = FieldErrors::new();
    unknown_field_errors(&request.unknown, &mut errors);
    let schedule = checked_schedule(request.schedule, &mut errors);
    let target = resolve_target(request.target, everyone(), &mut errors);
    let options = ExportOptions {
        columns: request.columns.unwrap_or_else(|| ALL_COLUMNS.to_vec()),
        row_cap: request.row_cap.unwrap_or(max_row_cap.min(DEFAULT_ROW_CAP)),
    };
    errors.extend(
        options
            .problems()
            .into_iter()
            .map(|(name, m)| field(name, m)),
    );
    if options.row_cap > max_row_cap {
        errors.push(field(
            "row_cap",
            format!("at most {max_row_cap} rows per export"),
        ));
    }
    let spec = ExportSpec {
        target: checked(target, errors)?,
        columns: options.columns,
        row_cap: options.row_cap,
    };
    new_task(ActionKind::Export, &spec.target, &spec, user, schedule)
}

/// Validates a status change request (the status must exist: read through `db`).
pub async fn status_change_task<C: ConnectionTrait>(
    db: &C,
    user: &StaffUser,
    request: StatusChangeRequest,
) -> Result<NewTask, SubmitError> {
    let mut errors = FieldErrors::new();
    unknown_field_errors(&request.unknown, &mut errors);
    let schedule = checked_schedule(request.schedule, &mut errors);
    let target = resolve_target(request.target, everyone(), &mut errors);
    let change = StatusChange {
        to_status: request.to_status,
        reason: request.reason,
    };
    let problems = change.problems();
    // Only a well-formed code is looked up (a NUL, say, is an error on PostgreSQL).
    let to_status_ok = problems.iter().all(|(name, _)| *name != "to_status");
    errors.extend(problems.into_iter().map(|(name, m)| field(name, m)));
    if to_status_ok {
        match require_status(db, &change.to_status).await {
            Ok(()) => {}
            Err(CaseloadError::UnknownStatus(code)) => errors.push(field(
                "to_status",
                format!("no program status is called {code:?}"),
            )),
            Err(other) => return Err(other.into()),
        }
    }
    let spec = StatusChangeSpec {
        target: checked(target, errors)?,
        change,
    };
    new_task(
        ActionKind::ProgramStatusChange,
        &spec.target,
        &spec,
        user,
        schedule,
    )
}

/// Validates a watch request.
pub fn watch_task(user: &StaffUser, request: WatchRequest) -> Result<NewTask, SubmitError> {
    let mut errors = FieldErrors::new();
    unknown_field_errors(&request.unknown, &mut errors);
    let schedule = checked_schedule(request.schedule, &mut errors);
    let target = resolve_target(request.target, everyone(), &mut errors);
    let spec = WatchSpec {
        target: checked(target, errors)?,
    };
    new_task(ActionKind::Watch, &spec.target, &spec, user, schedule)
}

/// Validates an unwatch request; `"all": true` means everyone the user watches.
pub fn unwatch_task(user: &StaffUser, request: WatchRequest) -> Result<NewTask, SubmitError> {
    let mut errors = FieldErrors::new();
    unknown_field_errors(&request.unknown, &mut errors);
    let schedule = checked_schedule(request.schedule, &mut errors);
    let my_watch_list = Target::Query(PersonFilter {
        watched_by: Some(user.id),
        ..PersonFilter::default()
    });
    let target = resolve_target(request.target, my_watch_list, &mut errors);
    let spec = WatchSpec {
        target: checked(target, errors)?,
    };
    new_task(ActionKind::Unwatch, &spec.target, &spec, user, schedule)
}

/// Validates an email request.
pub fn email_task(user: &StaffUser, request: EmailRequest) -> Result<NewTask, SubmitError> {
    let mut errors = FieldErrors::new();
    unknown_field_errors(&request.unknown, &mut errors);
    let schedule = checked_schedule(request.schedule, &mut errors);
    let target = resolve_target(request.target, everyone(), &mut errors);
    let content = EmailContent {
        subject: request.subject,
        body: request.body,
        cc: request.cc,
    };
    errors.extend(
        content
            .problems()
            .into_iter()
            .map(|(name, m)| field(name, m)),
    );
    let spec = EmailSpec {
        target: checked(target, errors)?,
        content,
    };
    new_task(ActionKind::Email, &spec.target, &spec, user, schedule)
}

/// What `"all": true` means for most actions: everyone in the run_as user's scope when the
/// task runs.
fn everyone() -> Target {
    Target::Query(PersonFilter::default())
}

/// The target if every field was valid, else all the field errors.
fn checked(target: Option<Target>, errors: FieldErrors) -> Result<Target, SubmitError> {
    match target {
        Some(target) if errors.is_empty() => Ok(target),
        _ => Err(SubmitError::Invalid(errors)),
    }
}

/// A task owned by and run as `user`, scheduled as asked; a list target's size is the
/// progress total up front.
fn new_task(
    kind: ActionKind,
    target: &Target,
    spec: &impl Serialize,
    user: &StaffUser,
    schedule: ScheduleRequest,
) -> Result<NewTask, SubmitError> {
    let spec = serde_json::to_value(spec)
        .map_err(|e| SubmitError::Queue(queue::QueueError::Invalid(e.to_string())))?;
    let mut task = NewTask::new(kind.component(), spec, user.id)
        .with_created_by(user.username.clone())
        .with_priority(schedule.priority.unwrap_or(0));
    if let Some(run_at) = schedule.run_at {
        task = task.with_run_at(run_at);
    }
    Ok(match target {
        Target::Ids(ids) => task.with_progress_total(ids.len() as i64),
        Target::Query(_) => task,
    })
}
