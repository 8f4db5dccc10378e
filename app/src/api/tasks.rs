//! The signed-in user's tasks, and the live updates that keep their list current.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// Tasks per page of "My tasks".
pub const TASKS_PAGE_SIZE: u64 = 25;

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
    pub finished: Option<String>,
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

/// The name people see for an action.
pub fn action_label(component: &str) -> &str {
    match component {
        "caseload.export" => "Export",
        "caseload.program_status_change" => "Change status",
        "caseload.watch" => "Watch",
        "caseload.unwatch" => "Unwatch",
        "caseload.email" => "Email",
        other => other,
    }
}

/// The signed-in user's tasks, newest first, one page at a time (from 0).
#[server(endpoint = "my_tasks")]
pub async fn list_my_tasks(page: u64) -> Result<TaskPage, AppError> {
    crate::api::ssr::respond(ssr_impl::my_tasks(page)).await
}

#[cfg(feature = "ssr")]
mod ssr_impl {
    use queue::{Page, Task, TaskFilter};

    use super::*;
    use crate::api::ssr::{internal, require_user, state};

    pub async fn my_tasks(page: u64) -> Result<TaskPage, AppError> {
        let user = require_user().await?;
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
        Ok(TaskPage {
            tasks: tasks.into_iter().map(task_row).collect(),
            total,
        })
    }

    pub fn task_row(task: Task) -> TaskRow {
        TaskRow {
            id: task.id,
            action: task.execution_component_name,
            status: task.workflow_status.as_str().to_owned(),
            progress_done: task.progress_done,
            progress_total: task.progress_total,
            created: task.created_date.to_rfc3339(),
            finished: task.workflow_stopped_date.map(|at| at.to_rfc3339()),
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
