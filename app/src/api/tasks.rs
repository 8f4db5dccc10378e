//! The signed-in user's tasks, and the live updates that keep their list current.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// Tasks per page of "My tasks".
pub const TASKS_PAGE_SIZE: u64 = 25;

/// The last page "My tasks" may ask for: ten million tasks in, more than anyone keeps (and
/// within what the databases accept as an offset).
pub const MAX_TASKS_PAGE: u64 = 400_000;

/// One task in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRow {
    pub id: Uuid,
    /// The executor's component name, e.g. `caseload.export`.
    pub action: String,
    /// `QUEUED`, `EXECUTING`, `COMPLETED`, ...
    pub status: String,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
    /// RFC 3339, UTC.
    pub created: String,
    /// RFC 3339, UTC: not before this.
    pub run_at: String,
    pub finished: Option<String>,
    /// An export whose file has passed its retention (and is deleted or about to be).
    pub export_expired: bool,
}

/// A page of tasks, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskPage {
    pub tasks: Vec<TaskRow>,
    pub total: u64,
}

/// A change to a task as the live stream (`/api/1/task-events`) sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUpdate {
    pub task_id: Uuid,
    pub status: String,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
}

/// The bulk actions' component names (`caseload::actions::EXPORT` etc., which the browser
/// build cannot reach).
pub const EXPORT_ACTION: &str = "caseload.export";
pub const STATUS_CHANGE_ACTION: &str = "caseload.program_status_change";
pub const WATCH_ACTION: &str = "caseload.watch";
pub const UNWATCH_ACTION: &str = "caseload.unwatch";
pub const EMAIL_ACTION: &str = "caseload.email";

/// The name people see for an action.
pub fn action_label(component: &str) -> &str {
    match component {
        EXPORT_ACTION => "Export",
        STATUS_CHANGE_ACTION => "Change status",
        WATCH_ACTION => "Watch",
        UNWATCH_ACTION => "Unwatch",
        EMAIL_ACTION => "Email",
        other => other,
    }
}

/// Whether a status is final: the task will not run again unless an admin retries it.
pub fn is_finished(status: &str) -> bool {
    matches!(status, "COMPLETED" | "FAILURE" | "ERROR" | "ABANDONED")
}

/// The signed-in user's tasks, newest first, one page at a time (from 0).
#[server(endpoint = "my_tasks")]
pub async fn list_my_tasks(page: u64) -> Result<TaskPage, AppError> {
    crate::api::ssr::respond(ssr_impl::my_tasks(page)).await
}

#[cfg(feature = "ssr")]
pub(crate) mod ssr_impl {
    use caseload::actions::export_files::{export_expired, export_expires_at};
    use queue::{Page, Task, TaskFilter};

    use super::*;
    use crate::api::ssr::{abandon_reason, internal, require_user, state};

    pub async fn my_tasks(page: u64) -> Result<TaskPage, AppError> {
        let user = require_user().await?;
        if page > MAX_TASKS_PAGE {
            return Err(AppError::Invalid(format!("page: at most {MAX_TASKS_PAGE}")));
        }
        let store = state()?.store;
        let filter = TaskFilter {
            owner_id: Some(user.id),
            ..TaskFilter::default()
        };
        let window = Page {
            offset: page.saturating_mul(TASKS_PAGE_SIZE),
            limit: TASKS_PAGE_SIZE,
        };
        let tasks = store.task_list(&filter, window).await.map_err(internal)?;
        let total = store.task_count(&filter).await.map_err(internal)?;
        let retention = state()?.bulk.export_retention;
        Ok(TaskPage {
            tasks: tasks
                .into_iter()
                .map(|task| task_row(task, retention))
                .collect(),
            total,
        })
    }

    pub async fn task_detail(id: Uuid) -> Result<TaskDetail, AppError> {
        let user = require_user().await?;
        let is_admin = user.role == caseload::users::Role::Admin;
        let store = state()?.store;
        let task = match store.task_get(id).await.map_err(internal)? {
            Some(task) if is_admin || task.owner_id == user.id => task,
            _ => return Err(AppError::NotFound("Task".into())),
        };
        let history = store.task_history(id).await.map_err(internal)?;
        let retention = state()?.bulk.export_retention;
        let export_file = (task.owner_id == user.id
            && task.execution_component_name == EXPORT_ACTION
            && task.workflow_status == queue::TaskStatus::Completed)
            .then(|| export_file_of(&task, retention, store.clock().now()))
            .flatten();
        Ok(TaskDetail {
            report: caseload::actions::task_report(&task).map(TaskReport::from),
            export_file,
            attempt: task.attempt,
            max_attempts: task.max_attempts,
            run_at: task.run_at.to_rfc3339(),
            started: task.execution_started_date.map(|at| at.to_rfc3339()),
            spec_summary: super::detail_impl::summarize_spec(&task.execution_spec),
            error_detail: task.workflow_status_desc.clone().filter(|_| is_admin),
            history: history
                .into_iter()
                .map(|event| HistoryEntry {
                    at: event.occurred_date.to_rfc3339(),
                    status: event.status.as_str().to_owned(),
                    attempt: event.attempt,
                    actor: event.actor,
                    message: event.message.filter(|_| is_admin),
                })
                .collect(),
            can_repair: is_admin,
            task: task_row(task, retention),
        })
    }

    /// An admin repair of one task.
    pub enum Repair {
        Retry,
        Abandon(String),
    }

    /// Applies a repair; `false` when the task's status does not allow it (already done, or
    /// someone else got there first), which is not an error: repairs are idempotent.
    pub async fn repair(id: Uuid, repair: Repair) -> Result<bool, AppError> {
        let user = require_user().await?;
        if user.role != caseload::users::Role::Admin {
            return Err(AppError::Forbidden);
        }
        let store = state()?.store;
        if store.task_get(id).await.map_err(internal)?.is_none() {
            return Err(AppError::NotFound("Task".into()));
        }
        let changed = match repair {
            Repair::Retry => store.task_retry(id, &user.username).await,
            Repair::Abandon(reason) => {
                store
                    .task_abandon(id, abandon_reason(&reason)?, &user.username)
                    .await
            }
        }
        .map_err(internal)?;
        tracing::info!(task = %id, admin = %user.username, changed, "task repaired");
        Ok(changed)
    }

    /// A completed export's file: downloadable until its retention has passed.
    fn export_file_of(
        task: &Task,
        retention: std::time::Duration,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<ExportFile> {
        let expires = export_expires_at(task, retention)?;
        Some(if expires <= now {
            ExportFile::Expired {
                at: expires.to_rfc3339(),
            }
        } else {
            ExportFile::Available {
                href: crate::api::bulk::export_file_href(task.id),
                until: expires.to_rfc3339(),
            }
        })
    }

    /// A task as lists show it; `export_retention` tells whether an export's file expired.
    pub fn task_row(task: Task, export_retention: std::time::Duration) -> TaskRow {
        let export_expired = task.execution_component_name == EXPORT_ACTION
            && export_expired(&task, export_retention, chrono::Utc::now());
        TaskRow {
            id: task.id,
            action: task.execution_component_name,
            status: task.workflow_status.as_str().to_owned(),
            progress_done: task.progress_done,
            progress_total: task.progress_total,
            created: task.created_date.to_rfc3339(),
            run_at: task.run_at.to_rfc3339(),
            finished: task.workflow_stopped_date.map(|at| at.to_rfc3339()),
            export_expired,
        }
    }
}

#[cfg(feature = "ssr")]
impl From<&queue::QueueEvent> for TaskUpdate {
    fn from(event: &queue::QueueEvent) -> Self {
        TaskUpdate {
            task_id: event.task_id,
            status: event.status.as_str().to_owned(),
            progress_done: event.progress_done,
            progress_total: event.progress_total,
        }
    }
}

/// One entry of a task's timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// RFC 3339, UTC.
    pub at: String,
    pub status: String,
    pub attempt: i32,
    /// Who moved the task: a node, or the user who asked.
    pub actor: String,
    /// The attempt's error or an admin's reason; sent to admins only.
    pub message: Option<String>,
}

/// What a bulk action has done so far, from its checkpoint. Which counts apply depends on
/// the action (see `caseload::actions::ActionReport`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskReport {
    /// Changed, newly (un)watched, exported or sent.
    pub changed: u64,
    /// Already as wanted, or done by an earlier attempt.
    pub unchanged: u64,
    /// Named, but outside the people the user may act on.
    pub forbidden: u64,
    /// Named, but no such person.
    pub unknown: u64,
    /// Email: people without an address.
    pub without_address: u64,
    /// Email: waiting for another try.
    pub deferred: u64,
    /// Email: bounced, or interrupted mid-send and deliberately not repeated.
    pub failed: u64,
    /// A few of the forbidden and unknown ids, to look up.
    pub forbidden_sample: Vec<Uuid>,
    pub unknown_sample: Vec<Uuid>,
}

#[cfg(feature = "ssr")]
impl From<caseload::actions::ActionReport> for TaskReport {
    fn from(report: caseload::actions::ActionReport) -> Self {
        TaskReport {
            changed: report.changed,
            unchanged: report.unchanged,
            forbidden: report.forbidden,
            unknown: report.unknown,
            without_address: report.without_address,
            deferred: report.deferred,
            failed: report.failed,
            forbidden_sample: report.forbidden_sample,
            unknown_sample: report.unknown_sample,
        }
    }
}

/// Everything the task detail page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDetail {
    pub task: TaskRow,
    pub attempt: i32,
    pub max_attempts: i32,
    /// RFC 3339, UTC: not before this.
    pub run_at: String,
    pub started: Option<String>,
    /// What was asked for, one line per field of the request (lists are counted, not listed).
    pub spec_summary: Vec<(String, String)>,
    /// The error detail (`workflow_status_desc`); sent to admins only.
    pub error_detail: Option<String>,
    pub history: Vec<HistoryEntry>,
    /// Whether the viewer may retry or abandon tasks (admins).
    pub can_repair: bool,
    /// What the action has done so far; `None` before its first batch.
    pub report: Option<TaskReport>,
    /// The file of a completed export, for its owner.
    pub export_file: Option<ExportFile>,
}

/// A completed export's file, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExportFile {
    /// Downloadable at `href` until `until` (RFC 3339).
    Available { href: String, until: String },
    /// Past its retention since `at` (RFC 3339): deleted, not downloadable.
    Expired { at: String },
}

impl TaskDetail {
    /// Retry applies to tasks that ended without success.
    pub fn can_retry(&self) -> bool {
        self.can_repair && matches!(self.task.status.as_str(), "FAILURE" | "ERROR" | "ABANDONED")
    }

    /// Abandon applies to anything not yet finished for good.
    pub fn can_abandon(&self) -> bool {
        self.can_repair && !matches!(self.task.status.as_str(), "COMPLETED" | "ABANDONED")
    }
}

/// A task with its timeline: the owner's, or anyone's for an admin.
#[server(endpoint = "task_detail")]
pub async fn get_task_detail(id: Uuid) -> Result<TaskDetail, AppError> {
    crate::api::ssr::respond(ssr_impl::task_detail(id)).await
}

/// Puts a failed, errored or abandoned task back in the queue (admins only).
#[server(endpoint = "retry_task")]
pub async fn retry_task(id: Uuid) -> Result<bool, AppError> {
    crate::api::ssr::respond(ssr_impl::repair(id, ssr_impl::Repair::Retry)).await
}

/// Abandons a task that has not finished; running work is cancelled (admins only).
#[server(endpoint = "abandon_task")]
pub async fn abandon_task(id: Uuid, reason: String) -> Result<bool, AppError> {
    crate::api::ssr::respond(ssr_impl::repair(id, ssr_impl::Repair::Abandon(reason))).await
}

#[cfg(feature = "ssr")]
mod detail_impl {
    use serde_json::Value;

    /// One `(field, value)` line per top-level field of a spec; arrays and objects are
    /// counted rather than listed, since a target can hold thousands of ids.
    pub fn summarize_spec(spec: &Value) -> Vec<(String, String)> {
        let Value::Object(fields) = spec else {
            return vec![("request".into(), short(spec))];
        };
        fields
            .iter()
            .map(|(key, value)| (key.clone(), short(value)))
            .collect()
    }

    fn short(value: &Value) -> String {
        match value {
            Value::Null => "none".into(),
            Value::String(text) => text.chars().take(200).collect(),
            Value::Array(items) => format!("{} items", items.len()),
            Value::Object(fields) => {
                let keys: Vec<&str> = fields.keys().map(String::as_str).collect();
                format!("{{{}}}", keys.join(", "))
            }
            other => other.to_string(),
        }
    }

    #[cfg(test)]
    mod tests {
        use serde_json::json;

        use super::summarize_spec;

        #[test]
        fn lists_are_counted_not_listed() {
            let spec =
                json!({"target": {"ids": [1, 2, 3]}, "status": "ACTIVE", "ids": [1, 2], "n": 5});
            assert_eq!(
                summarize_spec(&spec),
                [
                    ("ids".to_owned(), "2 items".to_owned()),
                    ("n".to_owned(), "5".to_owned()),
                    ("status".to_owned(), "ACTIVE".to_owned()),
                    ("target".to_owned(), "{ids}".to_owned()),
                ]
            );
            assert_eq!(
                summarize_spec(&json!(null)),
                [("request".to_owned(), "none".to_owned())]
            );
        }
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    #[test]
    fn the_browser_knows_the_action_names() {
        use caseload::actions as names;
        assert_eq!(
            [
                super::EXPORT_ACTION,
                super::STATUS_CHANGE_ACTION,
                super::WATCH_ACTION,
                super::UNWATCH_ACTION,
                super::EMAIL_ACTION,
            ],
            [
                names::EXPORT,
                names::PROGRAM_STATUS_CHANGE,
                names::WATCH,
                names::UNWATCH,
                names::EMAIL
            ]
        );
    }
}
