//! A task as people and programs see it: the one view the dashboard's lists and pages and
//! the JSON API share.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::accounts::Role;
use crate::actions::{ActionKind, ActionReport};
use crate::export::ExportFileState;
use crate::requests::{FieldErrors, ScheduleRequest};
use crate::state::TaskStatus;

/// A task's status and progress. Never its checkpoint, its error detail (admins read that on
/// its page) or its request, which can hold thousands of ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskView {
    pub id: Uuid,
    /// The executor's component name, e.g. `caseload.export`.
    pub action: String,
    /// What the task was asked to do, in one line: `Email 3 people: 'Hello'`.
    pub summary: String,
    pub owner_id: Uuid,
    pub created_date: DateTime<Utc>,
    pub created_by: String,
    pub workflow_status: TaskStatus,
    pub attempt: i32,
    pub max_attempts: i32,
    /// Not before this.
    pub run_at: DateTime<Utc>,
    /// Higher runs first among waiting tasks.
    pub priority: i32,
    pub execution_started_date: Option<DateTime<Utc>>,
    pub workflow_stopped_date: Option<DateTime<Utc>>,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
    /// What a bulk action has done so far (changed, unchanged, skipped people, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ActionReport>,
    /// For an export: what the caller may do with its file now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_file: Option<ExportFileState>,
    pub links: TaskLinks,
}

/// Where to find more about a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskLinks {
    /// Where to follow the task's status.
    #[serde(rename = "self")]
    pub this: String,
    /// For the caller's own export that has not expired: where its CSV can be downloaded
    /// once it is COMPLETED (see `export_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// For a bulk action: where each person's outcome so far downloads as CSV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<String>,
}

/// Where task `id`'s outcomes per person download (`GET`, CSV).
pub fn outcomes_href(id: uuid::Uuid) -> String {
    format!("/api/1/tasks/{id}/outcomes")
}

impl TaskView {
    /// Whether the task was scheduled for later rather than submitted to run at once.
    pub fn is_scheduled(&self) -> bool {
        self.run_at > self.created_date + chrono::Duration::seconds(1)
    }

    /// The bulk action the task runs, if it runs one.
    pub fn kind(&self) -> Option<ActionKind> {
        ActionKind::of_component(&self.action)
    }

    /// A finished export of the caller's whose file has passed its retention (deleted, or
    /// about to be).
    pub fn export_expired(&self) -> bool {
        matches!(self.export_file, Some(ExportFileState::Expired { .. }))
    }
}

/// What a person may do to tasks from a list or a task's page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskAct {
    /// Stop an unfinished task: a waiting one never starts, a running one stops at its
    /// next batch boundary. Owners may cancel their own; admins anyone's.
    Cancel,
    /// Put a task that ended badly back in the queue with a fresh attempt budget (admins).
    Retry,
    /// Take a running task back from its node at once, without waiting for the rescuer to
    /// judge the node dead (admins): for a stalled task.
    Requeue,
    /// Give up on a task that has not completed, with a reason (admins).
    Abandon,
}

impl TaskAct {
    pub const ALL: [TaskAct; 4] = [Self::Cancel, Self::Retry, Self::Requeue, Self::Abandon];

    /// Whether a task in `status` is one this act moves.
    pub fn applies_to(self, status: TaskStatus) -> bool {
        match self {
            Self::Cancel => status.can_cancel(),
            Self::Retry => status.is_problem(),
            Self::Requeue => TaskStatus::RUNNING.contains(&status),
            Self::Abandon => status.can_abandon(),
        }
    }

    /// Its name on the wire (`cancel`, `retry`, …), as a form field carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancel => "cancel",
            Self::Retry => "retry",
            Self::Requeue => "requeue",
            Self::Abandon => "abandon",
        }
    }

    /// Whether only administrators may do it.
    pub fn admins_only(self) -> bool {
        self != Self::Cancel
    }

    /// The button's words.
    pub fn label(self) -> &'static str {
        match self {
            Self::Cancel => "Cancel",
            Self::Retry => "Retry",
            Self::Requeue => "Requeue now",
            Self::Abandon => "Abandon",
        }
    }

    /// What a person reads after it moved `n` tasks: "Retried 3 tasks".
    pub fn done_words(self, n: u64) -> String {
        let verb = match self {
            Self::Cancel => "Cancelled",
            Self::Retry => "Retried",
            Self::Requeue => "Requeued",
            Self::Abandon => "Abandoned",
        };
        format!("{verb} {}", crate::words::plural(n, "task", "tasks"))
    }
}

/// Which tasks an act applies to: rows a person ticked, or every task a list's filters
/// match however many pages they fill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskSelection {
    /// Up to 1,000 task ids.
    Ids(Vec<Uuid>),
    /// Every task the filters match (`before` and `limit` are ignored); boxed, as a query
    /// is ten times the size of the ids' list head.
    Matching(Box<crate::task_query::TaskQuery>),
}

/// An act on a selection of tasks, as the dashboard and `POST /api/1/tasks/act` send it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ActRequest {
    pub act: TaskAct,
    pub selection: TaskSelection,
    /// Why, for an abandon (1 to 500 characters); ignored otherwise.
    #[serde(default)]
    pub reason: String,
}

/// `POST /api/1/tasks/{id}/schedule`: a waiting task's new time, its new priority, or both
/// (the owner's or an admin's steer); a field left out keeps its value. A time already past
/// means "run now".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RescheduleRequest {
    /// Not before this time (RFC 3339; any offset); at most a year ahead or behind.
    #[serde(default)]
    pub run_at: Option<DateTime<Utc>>,
    /// Higher runs first among waiting tasks: from -10 to 10 for staff, -100 to 100 for
    /// admins.
    #[serde(default)]
    pub priority: Option<i32>,
}

impl RescheduleRequest {
    /// A field error for each bad value (as a bulk request's schedule is checked), and one
    /// when the request changes nothing.
    pub fn problems(&self, role: Role, now: DateTime<Utc>) -> FieldErrors {
        let schedule = ScheduleRequest {
            run_at: self.run_at,
            priority: self.priority,
        };
        let mut errors = schedule.problems(role, now);
        if self.run_at.is_none() && self.priority.is_none() {
            errors.push((
                "run_at".to_owned(),
                "give a time, a priority or both".to_owned(),
            ));
        }
        errors
    }
}

/// What an act did: how many tasks it moved, and how many selected ones it left alone (in
/// a status it does not apply to, or already moved by someone else).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActOutcome {
    pub changed: usize,
    pub skipped: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(status: TaskStatus, export_file: Option<ExportFileState>) -> TaskView {
        let now = Utc::now();
        TaskView {
            id: Uuid::now_v7(),
            action: ActionKind::Export.component().into(),
            summary: "Export 3 people to CSV (all columns)".into(),
            owner_id: Uuid::now_v7(),
            created_date: now,
            created_by: "lee".into(),
            workflow_status: status,
            attempt: 1,
            max_attempts: 5,
            run_at: now,
            priority: 0,
            execution_started_date: None,
            workflow_stopped_date: None,
            progress_done: 0,
            progress_total: None,
            report: None,
            export_file,
            links: TaskLinks {
                this: "/api/1/tasks/x".into(),
                file: None,
                outcomes: None,
            },
        }
    }

    #[test]
    fn each_act_moves_the_statuses_it_names() {
        let moved = |act: TaskAct| -> Vec<&str> {
            TaskStatus::ALL
                .into_iter()
                .filter(|status| act.applies_to(*status))
                .map(TaskStatus::as_str)
                .collect()
        };
        assert_eq!(
            moved(TaskAct::Cancel),
            ["QUEUED", "SCHEDULING", "EXECUTING"]
        );
        assert_eq!(moved(TaskAct::Retry), ["FAILURE", "ERROR", "ABANDONED"]);
        assert_eq!(moved(TaskAct::Requeue), ["SCHEDULING", "EXECUTING"]);
        assert_eq!(
            moved(TaskAct::Abandon),
            ["QUEUED", "SCHEDULING", "EXECUTING", "FAILURE", "ERROR"]
        );
        for act in TaskAct::ALL {
            assert_eq!(
                serde_json::to_value(act).expect("serializable"),
                act.as_str(),
                "the wire name is the serde name"
            );
        }
        assert!(!TaskAct::Cancel.admins_only());
        assert!(TaskAct::Requeue.admins_only());
    }

    #[test]
    fn an_export_has_expired_when_its_file_state_says_so() {
        let now = Utc::now();
        let expired = Some(ExportFileState::Expired { at: now });
        assert!(export(TaskStatus::Completed, expired).export_expired());
        let ready = Some(ExportFileState::Ready { until: now });
        assert!(!export(TaskStatus::Completed, ready).export_expired());
        let not_yours = Some(ExportFileState::NotYours);
        assert!(!export(TaskStatus::Completed, not_yours).export_expired());
    }

    #[test]
    fn a_task_is_scheduled_when_it_may_not_start_at_once() {
        let mut task = export(TaskStatus::Queued, None);
        assert!(!task.is_scheduled());
        task.run_at = task.created_date + chrono::Duration::milliseconds(300);
        assert!(!task.is_scheduled());
        task.run_at = task.created_date + chrono::Duration::minutes(5);
        assert!(task.is_scheduled());
    }
}
