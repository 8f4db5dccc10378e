//! The signed-in user's tasks, and the live updates that keep their list current.

use bulkq_types::TaskStatus;
use bulkq_types::task::TaskView;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// Tasks per page of "My tasks".
pub const TASKS_PAGE_SIZE: u64 = 25;

/// The most tasks one list request returns.
pub const MAX_LIST_LIMIT: u64 = 200;

/// The furthest a list may start: more than any node keeps (finished tasks are pruned), and
/// within what both databases accept as an offset.
pub const MAX_LIST_OFFSET: u64 = 10_000_000;

/// A page of tasks, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskPage {
    pub tasks: Vec<TaskView>,
    pub total: u64,
}

/// A change to a task as the live stream (`/api/1/task-events`) sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUpdate {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
}

/// The signed-in user's tasks, newest first, one page at a time (from 0).
#[server(endpoint = "my_tasks")]
pub async fn list_my_tasks(page: u64) -> Result<TaskPage, AppError> {
    crate::api::ssr::respond(ssr_impl::my_tasks(page)).await
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use bulkq_types::actions::EXPORT;
    use bulkq_types::task::TaskLinks;
    use caseload::actions::export_files::{export_expired, export_expires_at};
    use caseload::actions::summary::{StatusNames, summarize};
    use caseload::users::StaffUser;
    use queue::{Page, Store, Task, TaskFilter};

    use super::*;
    use crate::api::ssr::{AppState, abandon_reason, require_user, state};

    /// Which tasks a list shows; the dashboard and the JSON API both ask through
    /// [`task_page`].
    #[derive(Debug, Clone, Copy, Default)]
    pub struct ListRequest {
        /// Only the user's own tasks; staff only ever see their own.
        pub only_mine: bool,
        pub status: Option<TaskStatus>,
        /// How many of the newest tasks to skip, at most [`MAX_LIST_OFFSET`].
        pub offset: u64,
        /// From 1 to [`MAX_LIST_LIMIT`].
        pub limit: u64,
    }

    /// A page of the tasks `user` may see, newest first, and how many match in all.
    pub async fn task_page(
        store: &Store,
        user: &StaffUser,
        request: ListRequest,
    ) -> Result<(Vec<Task>, u64), AppError> {
        let mut problems = Vec::new();
        if request.limit == 0 || request.limit > MAX_LIST_LIMIT {
            problems.push((
                "limit".to_owned(),
                format!("must be between 1 and {MAX_LIST_LIMIT}"),
            ));
        }
        if request.offset > MAX_LIST_OFFSET {
            problems.push((
                "offset".to_owned(),
                format!("must be at most {MAX_LIST_OFFSET}"),
            ));
        }
        if !problems.is_empty() {
            return Err(AppError::invalid_fields(problems));
        }
        let only_mine = request.only_mine || user.role != caseload::users::Role::Admin;
        let filter = TaskFilter {
            statuses: request.status.into_iter().collect(),
            component: None,
            owner_id: only_mine.then_some(user.id),
        };
        let page = Page {
            offset: request.offset,
            limit: request.limit,
        };
        Ok(tokio::try_join!(
            store.task_list(&filter, page),
            store.task_count(&filter)
        )?)
    }

    /// The task, if `user` may see it: their own, or anyone's for an admin. Anyone else's is
    /// "not found", so task ids of other users cannot even be confirmed to exist.
    pub async fn visible_task(store: &Store, user: &StaffUser, id: Uuid) -> Result<Task, AppError> {
        match store.task_get(id).await? {
            Some(task) if user.may_see_tasks_of(task.owner_id) => Ok(task),
            _ => Err(AppError::NotFound("Task".into())),
        }
    }

    pub async fn my_tasks(page: u64) -> Result<TaskPage, AppError> {
        let user = require_user().await?;
        let app = state()?;
        let request = ListRequest {
            only_mine: true,
            status: None,
            offset: page.saturating_mul(TASKS_PAGE_SIZE),
            limit: TASKS_PAGE_SIZE,
        };
        let (tasks, total) = task_page(&app.store, &user, request).await?;
        let views = TaskViews::load(&app).await?;
        Ok(TaskPage {
            tasks: tasks.into_iter().map(|task| views.view(task)).collect(),
            total,
        })
    }

    pub async fn task_detail(id: Uuid) -> Result<TaskDetail, AppError> {
        let user = require_user().await?;
        let is_admin = user.role == caseload::users::Role::Admin;
        let app = state()?;
        let task = visible_task(&app.store, &user, id).await?;
        let history = app.store.task_history(id).await?;
        let views = TaskViews::load(&app).await?;
        let export_file = (task.owner_id == user.id
            && task.execution_component_name == EXPORT
            && task.workflow_status == TaskStatus::Completed)
            .then(|| views.export_file(&task))
            .flatten();
        Ok(TaskDetail {
            export_file,
            spec_summary: super::detail_impl::summarize_spec(&task.execution_spec),
            error_detail: task.workflow_status_desc.clone().filter(|_| is_admin),
            history: history
                .into_iter()
                .map(|event| HistoryEntry {
                    at: event.occurred_date.to_rfc3339(),
                    status: event.status,
                    attempt: event.attempt,
                    actor: event.actor,
                    message: event.message.filter(|_| is_admin),
                })
                .collect(),
            can_repair: is_admin,
            task: views.view(task),
        })
    }

    /// Stops a task for its owner or an admin: a waiting one never starts, a running one
    /// stops at its next batch boundary keeping what it committed. It ends ABANDONED, with
    /// who cancelled it in its history. `false` when it had already finished.
    pub async fn cancel(store: &Store, user: &StaffUser, id: Uuid) -> Result<bool, AppError> {
        let task = visible_task(store, user, id).await?;
        if !task.workflow_status.can_cancel() {
            return Ok(false);
        }
        let changed = store.task_abandon(id, "cancelled", &user.username).await?;
        tracing::info!(task = %id, user = %user.username, changed, "task cancelled");
        Ok(changed)
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
            return Err(AppError::forbidden());
        }
        let store = state()?.store;
        visible_task(&store, &user, id).await?;
        let changed = match repair {
            Repair::Retry => store.task_retry(id, &user.username).await,
            Repair::Abandon(reason) => {
                store
                    .task_abandon(id, abandon_reason(&reason)?, &user.username)
                    .await
            }
        }?;
        tracing::info!(task = %id, admin = %user.username, changed, "task repaired");
        Ok(changed)
    }

    /// What turning tasks into the one view needs, read once per request: the export
    /// retention and the time (is an export's file still there to link to?), and the
    /// program statuses' names for the requests' summaries.
    pub struct TaskViews {
        export_retention: std::time::Duration,
        now: chrono::DateTime<chrono::Utc>,
        statuses: StatusNames,
    }

    impl TaskViews {
        pub async fn load(state: &AppState) -> Result<Self, AppError> {
            Ok(TaskViews {
                export_retention: state.bulk.export_retention,
                now: state.store.clock().now(),
                statuses: StatusNames::load(&state.db).await?,
            })
        }

        /// A completed export's file: downloadable until its retention has passed, judged at
        /// the same moment as the view's link to it.
        fn export_file(&self, task: &Task) -> Option<ExportFile> {
            let expires = export_expires_at(task, self.export_retention)?;
            Some(if expires <= self.now {
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

        /// A task as both doors show it.
        pub fn view(&self, task: Task) -> TaskView {
            TaskView {
                links: task_links(&task, self.export_retention, self.now),
                report: caseload::actions::task_report(&task),
                summary: summarize(&task, &self.statuses),
                id: task.id,
                action: task.execution_component_name,
                owner_id: task.owner_id,
                created_date: task.created_date,
                created_by: task.created_by,
                workflow_status: task.workflow_status,
                attempt: task.attempt,
                max_attempts: task.max_attempts,
                run_at: task.run_at,
                execution_started_date: task.execution_started_date,
                workflow_stopped_date: task.workflow_stopped_date,
                progress_done: task.progress_done,
                progress_total: task.progress_total,
            }
        }
    }

    /// The task's own address and, for an export whose file has not expired, its file's.
    fn task_links(
        task: &Task,
        export_retention: std::time::Duration,
        now: chrono::DateTime<chrono::Utc>,
    ) -> TaskLinks {
        let id = task.id;
        TaskLinks {
            this: format!("/api/1/tasks/{id}"),
            file: (task.execution_component_name == EXPORT
                && !export_expired(task, export_retention, now))
            .then(|| crate::api::bulk::export_file_href(id)),
        }
    }
}

#[cfg(feature = "ssr")]
impl From<&queue::QueueEvent> for TaskUpdate {
    fn from(event: &queue::QueueEvent) -> Self {
        TaskUpdate {
            task_id: event.task_id,
            status: event.status,
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
    pub status: TaskStatus,
    pub attempt: i32,
    /// Who moved the task: a node, or the user who asked.
    pub actor: String,
    /// The attempt's error or an admin's reason; sent to admins only.
    pub message: Option<String>,
}

/// Everything the task detail page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDetail {
    pub task: TaskView,
    /// What was asked for, one line per field of the request (lists are counted, not listed).
    pub spec_summary: Vec<(String, String)>,
    /// The error detail (`workflow_status_desc`); sent to admins only.
    pub error_detail: Option<String>,
    pub history: Vec<HistoryEntry>,
    /// Whether the viewer may retry or abandon tasks (admins).
    pub can_repair: bool,
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
        self.can_repair && self.task.workflow_status.can_requeue()
    }

    /// Abandon applies to anything not yet finished for good.
    pub fn can_abandon(&self) -> bool {
        self.can_repair && self.task.workflow_status.can_abandon()
    }

    /// Whoever sees a task (its owner or an admin) may cancel it until it finishes.
    pub fn can_cancel(&self) -> bool {
        self.task.workflow_status.can_cancel()
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

/// Cancels a task that has not finished: the owner's own, or anyone's for an admin.
#[server(endpoint = "cancel_task")]
pub async fn cancel_task(id: Uuid) -> Result<bool, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    respond(async move { ssr_impl::cancel(&state()?.store, &require_user().await?, id).await })
        .await
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
