//! The checks every bulk action's request goes through alike (unknown fields, schedule,
//! target), and the task a checked request becomes; each action checks its own fields in
//! its module (`super::kinds`).
//!
//! Validation happens before anything is enqueued and reports every bad field at once, so
//! a task that exists was well-formed when submitted; executors check again only what can
//! change in between (a status deleted, the run_as user removed).

use std::collections::HashSet;

use bulkq_types::actions::ActionKind;
use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::{FieldErrors, ScheduleRequest, TargetRequest, UnknownFields};
use chrono::Utc;
use queue::NewTask;
use serde::Serialize;
use uuid::Uuid;

use super::target::{MAX_TARGET_IDS, Target};
use crate::CaseloadError;
use crate::users::{Role, StaffUser};

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

/// The request-wide checks of one user's request, collecting every bad field.
pub(crate) struct RequestChecks {
    role: Role,
    errors: FieldErrors,
}

impl RequestChecks {
    /// Begins with a field error for each of the request's unknown fields.
    pub fn new(unknown: &UnknownFields, user: &StaffUser) -> Self {
        let mut errors = FieldErrors::new();
        unknown_field_errors(unknown, &mut errors);
        RequestChecks {
            role: user.role,
            errors,
        }
    }

    /// The schedule, each value out of range (for the user's role) a field error.
    pub fn schedule(&mut self, schedule: ScheduleRequest) -> ScheduleRequest {
        self.errors.extend(schedule.problems(self.role, Utc::now()));
        schedule
    }

    /// The target to store; `everyone` is what `"all": true` means for the action.
    pub fn target(&mut self, request: TargetRequest, everyone: Target) -> Option<Target> {
        resolve_target(request, everyone, &mut self.errors)
    }

    /// Adds the action's own problems, each `(field, message)`.
    pub fn add<'a>(&mut self, problems: impl IntoIterator<Item = (&'a str, String)>) {
        self.errors.extend(
            problems
                .into_iter()
                .map(|(name, message)| field(name, message)),
        );
    }

    /// The target if every field was valid, else all the field errors.
    pub fn finish(self, target: Option<Target>) -> Result<Target, SubmitError> {
        checked(target, self.errors)
    }
}

/// What `"all": true` means for most actions: everyone in the run_as user's scope when the
/// task runs.
pub(crate) fn everyone() -> Target {
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
pub(crate) fn new_task(
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
