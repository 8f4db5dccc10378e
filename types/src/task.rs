//! A task as people and programs see it: the one view the dashboard's lists and pages and
//! the JSON API share.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::actions::{ActionReport, EXPORT};
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
    pub execution_started_date: Option<DateTime<Utc>>,
    pub workflow_stopped_date: Option<DateTime<Utc>>,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
    /// What a bulk action has done so far (changed, unchanged, skipped people, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<ActionReport>,
    pub links: TaskLinks,
}

/// Where to find more about a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskLinks {
    /// Where to follow the task's status.
    #[serde(rename = "self")]
    pub this: String,
    /// For an export: where its CSV can be downloaded once it is COMPLETED; absent once the
    /// file has passed its retention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl TaskView {
    /// Whether the task was scheduled for later rather than submitted to run at once.
    pub fn is_scheduled(&self) -> bool {
        self.run_at > self.created_date + chrono::Duration::seconds(1)
    }

    /// A finished export whose file has passed its retention (deleted, or about to be).
    pub fn export_expired(&self) -> bool {
        self.action == EXPORT
            && self.workflow_status == TaskStatus::Completed
            && self.links.file.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(status: TaskStatus, file: Option<&str>) -> TaskView {
        let now = Utc::now();
        TaskView {
            id: Uuid::now_v7(),
            action: EXPORT.into(),
            summary: "Export 3 people to CSV (all columns)".into(),
            owner_id: Uuid::now_v7(),
            created_date: now,
            created_by: "lee".into(),
            workflow_status: status,
            attempt: 1,
            max_attempts: 5,
            run_at: now,
            execution_started_date: None,
            workflow_stopped_date: None,
            progress_done: 0,
            progress_total: None,
            report: None,
            links: TaskLinks {
                this: "/api/1/tasks/x".into(),
                file: file.map(str::to_owned),
            },
        }
    }

    #[test]
    fn an_export_has_expired_once_its_finished_file_has_no_link() {
        assert!(export(TaskStatus::Completed, None).export_expired());
        assert!(!export(TaskStatus::Completed, Some("/file")).export_expired());
        assert!(!export(TaskStatus::Queued, None).export_expired());
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
