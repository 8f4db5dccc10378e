//! The signed-in user's tasks, and the live updates that keep their list current.

use bulkq_types::TaskStatus;
use bulkq_types::task::{ActOutcome, ActRequest, RescheduleRequest, TaskAct, TaskView};
use bulkq_types::task_query::{TaskPage, TaskQuery};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// The most ticked tasks one act takes (a filter takes any number).
pub const MAX_ACT_IDS: usize = 1_000;

/// A change to a task as the live stream (`/api/1/task-events`) sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUpdate {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
}

/// A page of the tasks the signed-in user may see (their own, or anyone's for an admin),
/// newest first, narrowed by the query's filters.
#[server(endpoint = "list_tasks", input = Json)]
pub async fn list_tasks(query: TaskQuery) -> Result<TaskPage, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    respond(async move { ssr_impl::task_page(&state()?, &require_user().await?, &query).await })
        .await
}

/// Cancels, retries, requeues or abandons the selected tasks.
#[server(endpoint = "act_on_tasks", input = Json)]
pub async fn act_on_tasks(request: ActRequest) -> Result<ActOutcome, AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async move {
        ssr_impl::act(&state()?, &require_user().await?, request_client(), request).await
    })
    .await
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use bulkq_types::actions::ActionKind;
    use bulkq_types::export::ExportFileState;
    use bulkq_types::task::{TaskLinks, TaskSelection};
    use bulkq_types::task_query::{COUNT_CAP, TaskSearch};
    use caseload::actions::export_files::export_file_state;
    use caseload::actions::summary::{StatusNames, summarize};
    use caseload::users::{Role, StaffUser};
    use queue::{BulkOutcome, Page, Store, Task, TaskFilter, TaskSelector};

    use super::*;
    use bulkq_types::audit::AuditAct;

    use crate::api::login_throttle::ClientAddress;
    use crate::api::ssr::{
        AppState, abandon_reason, actor as audit_actor, audit_after, internal, require_user, state,
    };

    /// A page of the tasks `user` may see, as both doors answer a list.
    pub async fn task_page(
        app: &AppState,
        user: &StaffUser,
        query: &TaskQuery,
    ) -> Result<TaskPage, AppError> {
        let search = query.check().map_err(AppError::invalid_fields)?;
        let filter = task_filter(app, user, &search).await?;
        let page = Page {
            before: search.before,
            limit: search.limit,
        };
        let found = app.store.task_page(&filter, page, COUNT_CAP).await?;
        let views = TaskViews::load(app, user.id).await?;
        Ok(TaskPage {
            tasks: found
                .tasks
                .into_iter()
                .map(|task| views.view(task))
                .collect(),
            total: found.total,
            more: found.more,
            next: found.next.map(|next| next.to_string()),
        })
    }

    /// The store's filter for what `user` asked: staff only ever see their own tasks.
    pub(crate) async fn task_filter(
        app: &AppState,
        user: &StaffUser,
        search: &TaskSearch,
    ) -> Result<TaskFilter, AppError> {
        let is_admin = user.role == Role::Admin;
        let owner_id = match &search.owner {
            Some(name) if name == &user.username => Some(user.id),
            Some(_) if !is_admin => {
                return Err(owner_problem("staff see only their own tasks"));
            }
            Some(name) => Some(
                caseload::users::user_id_by_username(&app.db, name)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| owner_problem(&format!("no user is named '{name}'")))?,
            ),
            None if search.mine || !is_admin => Some(user.id),
            None => None,
        };
        if search.mine && owner_id != Some(user.id) {
            return Err(owner_problem(
                "must be you when only your own tasks are listed",
            ));
        }
        let listed_in = match &search.person {
            Some(school_id) => {
                let person = caseload::people_sync::person_with_school_id(&app.db, school_id)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| {
                        AppError::invalid_fields([(
                            "person".to_owned(),
                            format!("no person has school id '{school_id}'"),
                        )])
                    })?;
                Some(caseload::outcomes::tasks_touching(person))
            }
            None => None,
        };
        Ok(TaskFilter {
            statuses: search.statuses.clone(),
            component: search.action.clone(),
            owner_id,
            created_from: search.created_from,
            created_until: search.created_until,
            id: search.id,
            text: search.text.clone(),
            // Errors can name what staff may not see; only admins search them.
            text_in_errors: is_admin,
            listed_in,
        })
    }

    fn owner_problem(message: &str) -> AppError {
        AppError::invalid_fields([("owner".to_owned(), message.to_owned())])
    }

    /// The task, if `user` may see it: their own, or anyone's for an admin. Anyone else's is
    /// "not found", so task ids of other users cannot even be confirmed to exist.
    pub async fn visible_task(store: &Store, user: &StaffUser, id: Uuid) -> Result<Task, AppError> {
        match store.task_get(id).await? {
            Some(task) if user.may_see_tasks_of(task.owner_id) => Ok(task),
            _ => Err(AppError::NotFound("Task".into())),
        }
    }

    /// Applies `act` to the selected tasks that `user` may act on and whose status it
    /// applies to; the rest are skipped. Idempotent: repeating it changes nothing more.
    pub async fn act(
        app: &AppState,
        user: &StaffUser,
        client: ClientAddress,
        request: ActRequest,
    ) -> Result<ActOutcome, AppError> {
        let ActRequest {
            act,
            selection,
            reason,
        } = request;
        let is_admin = user.role == Role::Admin;
        if act.admins_only() && !is_admin {
            return Err(AppError::forbidden());
        }
        let reason = match act {
            TaskAct::Abandon => abandon_reason(&reason)?,
            _ => "cancelled",
        };
        let (selector, unseen) = match selection {
            TaskSelection::Ids(ids) if ids.is_empty() || ids.len() > MAX_ACT_IDS => {
                return Err(AppError::invalid_fields([(
                    "selection".to_owned(),
                    format!("select between 1 and {MAX_ACT_IDS} tasks, or all matching"),
                )]));
            }
            TaskSelection::Ids(ids) if is_admin => (TaskSelector::Ids(ids), 0),
            TaskSelection::Ids(ids) => {
                // Staff act on their own tasks only; the others are skipped unread.
                let count = ids.len();
                let mut own = Vec::with_capacity(count);
                for id in ids {
                    if visible_task(&app.store, user, id).await.is_ok() {
                        own.push(id);
                    }
                }
                let unseen = count - own.len();
                if own.is_empty() {
                    return Ok(ActOutcome {
                        changed: 0,
                        skipped: unseen,
                    });
                }
                (TaskSelector::Ids(own), unseen)
            }
            TaskSelection::Matching(query) => {
                let search = query.check().map_err(AppError::invalid_fields)?;
                (
                    TaskSelector::Filter(task_filter(app, user, &search).await?),
                    0,
                )
            }
        };
        let store = &app.store;
        let actor = user.username.as_str();
        let outcome: BulkOutcome = match act {
            TaskAct::Cancel => store.task_cancel_many(&selector, actor).await?,
            TaskAct::Retry => store.task_retry_many(&selector, actor).await?,
            TaskAct::Requeue => store.task_requeue_running_many(&selector, actor).await?,
            TaskAct::Abandon => store.task_abandon_many(&selector, reason, actor).await?,
        };
        tracing::info!(
            user = actor,
            ?act,
            changed = outcome.changed.len(),
            "tasks acted on"
        );
        if !outcome.changed.is_empty() {
            let detail = match act {
                TaskAct::Abandon => format!("reason: {reason}"),
                _ => String::new(),
            };
            audit_after(
                app,
                &audit_actor(user, client),
                act.into(),
                &outcome.changed,
                detail,
            )
            .await?;
        }
        Ok(ActOutcome {
            changed: outcome.changed.len(),
            skipped: outcome.skipped.len() + unseen,
        })
    }

    /// Moves `user`'s waiting task (anyone's for an admin) as `request` asks; a task that
    /// has started or ended meanwhile is a conflict.
    pub async fn reschedule(
        app: &AppState,
        user: &StaffUser,
        client: ClientAddress,
        id: Uuid,
        request: RescheduleRequest,
    ) -> Result<Task, AppError> {
        visible_task(&app.store, user, id).await?;
        let problems = request.problems(user.role, app.store.clock().now());
        if !problems.is_empty() {
            return Err(AppError::invalid_fields(problems));
        }
        let actor = user.username.as_str();
        let moved = app
            .store
            .task_reschedule(id, request.run_at, request.priority, actor)
            .await?;
        let Some(task) = moved else {
            return Err(AppError::Conflict(
                "The task is no longer waiting: it has started or ended.".into(),
            ));
        };
        tracing::info!(user = actor, task = %id, run_at = %task.run_at, priority = task.priority, "task rescheduled");
        let detail = format!(
            "run at {}, priority {}",
            task.run_at.to_rfc3339(),
            task.priority
        );
        audit_after(
            app,
            &audit_actor(user, client),
            AuditAct::TaskReschedule,
            &[id],
            detail,
        )
        .await?;
        Ok(task)
    }

    pub async fn task_detail(id: Uuid) -> Result<TaskDetail, AppError> {
        let user = require_user().await?;
        let is_admin = user.role == caseload::users::Role::Admin;
        let app = state()?;
        let task = visible_task(&app.store, &user, id).await?;
        let history = app.store.task_history(id).await?;
        let views = TaskViews::load(&app, user.id).await?;
        let people_import = super::detail_impl::import_report(&task);
        Ok(TaskDetail {
            people_import,
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

    /// Applies `act` to one task `user` can see; `false` when its status does not allow
    /// it (already moved on, or someone else got there first), which is not an error.
    pub async fn act_on_one(
        app: &AppState,
        user: &StaffUser,
        client: ClientAddress,
        act: TaskAct,
        id: Uuid,
        reason: &str,
    ) -> Result<bool, AppError> {
        visible_task(&app.store, user, id).await?;
        let request = ActRequest {
            act,
            selection: TaskSelection::Ids(vec![id]),
            reason: reason.to_owned(),
        };
        let outcome = self::act(app, user, client, request).await?;
        Ok(outcome.changed == 1)
    }

    /// What turning tasks into the one view needs, read once per request: who is looking
    /// and when (may they download an export's file?), the export retention, and the
    /// program statuses' names for the requests' summaries.
    pub struct TaskViews {
        viewer: uuid::Uuid,
        export_retention: std::time::Duration,
        now: chrono::DateTime<chrono::Utc>,
        statuses: StatusNames,
    }

    impl TaskViews {
        pub async fn load(state: &AppState, viewer: uuid::Uuid) -> Result<Self, AppError> {
            Ok(TaskViews {
                viewer,
                export_retention: state.bulk.export_retention,
                now: state.store.clock().now(),
                statuses: StatusNames::load(&state.db).await?,
            })
        }

        /// A task as both doors show it.
        pub fn view(&self, task: Task) -> TaskView {
            let export_file =
                export_file_state(&task, self.viewer, self.export_retention, self.now);
            TaskView {
                links: task_links(&task, export_file),
                export_file,
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
                priority: task.priority,
                execution_started_date: task.execution_started_date,
                workflow_stopped_date: task.workflow_stopped_date,
                progress_done: task.progress_done,
                progress_total: task.progress_total,
            }
        }
    }

    /// The task's own address, its outcomes' for a bulk action and, for the viewer's own
    /// export that has not expired, its file's (downloadable once the export completes).
    fn task_links(task: &Task, export_file: Option<ExportFileState>) -> TaskLinks {
        let id = task.id;
        let file = matches!(
            export_file,
            Some(ExportFileState::Ready { .. } | ExportFileState::NotFinished)
        );
        let bulk_action = ActionKind::of_component(&task.execution_component_name).is_some();
        TaskLinks {
            this: format!("/api/1/tasks/{id}"),
            file: file.then(|| crate::api::bulk::export_file_href(id)),
            outcomes: bulk_action.then(|| bulkq_types::task::outcomes_href(id)),
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
    /// What a people import has done, and where its error report is.
    pub people_import: Option<bulkq_types::people_import::ImportReport>,
}

impl TaskDetail {
    /// The acts the viewer may take on this task now: Cancel for whoever sees it (its
    /// owner or an admin), the others for admins.
    pub fn acts(&self) -> Vec<TaskAct> {
        TaskAct::ALL
            .into_iter()
            .filter(|act| self.can_repair || !act.admins_only())
            .filter(|act| act.applies_to(self.task.workflow_status))
            .collect()
    }
}

/// Moves a waiting task to another time or priority, or runs it now (a past time): the
/// owner's own or, for admins, anyone's.
#[server(endpoint = "reschedule_task", input = Json)]
pub async fn reschedule_task(id: Uuid, request: RescheduleRequest) -> Result<(), AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async move {
        let user = require_user().await?;
        ssr_impl::reschedule(&state()?, &user, request_client(), id, request)
            .await
            .map(drop)
    })
    .await
}

/// A task with its timeline: the owner's, or anyone's for an admin.
#[server(endpoint = "task_detail")]
pub async fn get_task_detail(id: Uuid) -> Result<TaskDetail, AppError> {
    crate::api::ssr::respond(ssr_impl::task_detail(id)).await
}

/// Cancels, retries, requeues or abandons one task (`reason` for an abandon); `false` when
/// its status no longer allows it.
#[server(endpoint = "act_on_task")]
pub async fn act_on_task(
    id: Uuid,
    act: TaskAct,
    #[server(default)] reason: String,
) -> Result<bool, AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async move {
        let user = require_user().await?;
        ssr_impl::act_on_one(&state()?, &user, request_client(), act, id, &reason).await
    })
    .await
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

    /// What a people import task has done so far; `None` for other tasks.
    pub fn import_report(task: &queue::Task) -> Option<bulkq_types::people_import::ImportReport> {
        use caseload::people_import::{ImportProgress, ImportSpec};
        if task.execution_component_name != bulkq_types::actions::PEOPLE_IMPORT {
            return None;
        }
        let spec: ImportSpec = serde_json::from_value(task.execution_spec.clone()).ok()?;
        let progress = ImportProgress::of(&task.execution_state);
        Some(bulkq_types::people_import::ImportReport {
            rows: progress.rows,
            counts: progress.counts,
            problems: progress.problems,
            problems_href: bulkq_types::people_import::problems_href(spec.upload_id),
        })
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
