//! Task status for API clients: one task, or a page of the caller's tasks.
//!
//! What a client sees of a task is deliberately light: never the checkpoint
//! (`execution_state`) or the error detail (`workflow_status_desc`, for admins in the
//! dashboard), and not the spec, which can hold thousands of ids.

use app::api::ssr::AppState;
use app::api::tasks::ssr_impl::{ListRequest, TaskViews, cancel, task_page, visible_task};
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::extract::{Path, Query, State};
use bulkq_types::task::TaskView;
use queue::{Task, TaskStatus};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::user::ApiUser;

/// Tasks per list request when the client does not say.
const DEFAULT_LIST_LIMIT: u64 = 50;

/// `GET /api/1/tasks/{id}`: the owner's or, for admins, anyone's task. Others get a 404, so
/// task ids of other users cannot even be confirmed to exist.
#[utoipa::path(get, path = "/tasks/{id}", tag = "tasks",
    params(("id" = String, Path, description = "The task's id (a UUID)")),
    responses(
        (status = 200, description = "The task", body = TaskView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such task, or not yours", body = ErrorBody),
    ))]
pub async fn get_task(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, AppError> {
    let id = parse_id(&id, "task")?;
    let task = visible_task(&state.store, &user.0, id).await?;
    Ok(Json(view(task, &state).await?))
}

/// `POST /api/1/tasks/{id}/cancel`: stops a task that has not finished, the owner's own or,
/// for admins, anyone's. A waiting task never starts; a running one stops at its next batch
/// boundary, keeping what it committed. Either ends ABANDONED.
#[utoipa::path(post, path = "/tasks/{id}/cancel", tag = "tasks",
    params(("id" = String, Path, description = "The task's id (a UUID)")),
    responses(
        (status = 200, description = "Cancelled: the task as it is now", body = TaskView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such task, or not yours", body = ErrorBody),
        (status = 409, description = "The task has already finished", body = ErrorBody),
    ))]
pub async fn cancel_task(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<TaskView>, AppError> {
    let id = parse_id(&id, "task")?;
    if !cancel(&state.store, &user.0, id).await? {
        return Err(AppError::Conflict("The task has already finished.".into()));
    }
    let task = visible_task(&state.store, &user.0, id).await?;
    Ok(Json(view(task, &state).await?))
}

/// A path's id, or a 400 that says which id is not a UUID.
pub fn parse_id(text: &str, what: &str) -> Result<Uuid, AppError> {
    Uuid::parse_str(text).map_err(|_| AppError::BadRequest(format!("The {what} id is not a UUID.")))
}

/// Query parameters of `GET /api/1/tasks`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only the caller's own tasks. Staff always get only their own; for admins this is the
    /// switch between their own and everyone's.
    mine: Option<String>,
    /// Only tasks in this status.
    status: Option<TaskStatus>,
    /// How many of the newest tasks to skip (at most 10,000,000).
    #[serde(default)]
    offset: u64,
    /// Tasks per page, 1 to 200 (50 when absent).
    limit: Option<u64>,
}

/// A page of tasks, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskList {
    pub tasks: Vec<TaskView>,
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
}

/// `GET /api/1/tasks?mine&status=…&offset=…&limit=…`.
#[utoipa::path(get, path = "/tasks", tag = "tasks", params(ListQuery),
    responses(
        (status = 200, description = "A page of tasks, newest first", body = TaskList),
        (status = 400, description = "Unreadable parameters", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 422, description = "A parameter out of range", body = ErrorBody),
    ))]
pub async fn list_tasks(
    State(state): State<AppState>,
    user: ApiUser,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TaskList>, AppError> {
    let Query(query) = query.map_err(|rejection| AppError::BadRequest(rejection.body_text()))?;
    let request = ListRequest {
        only_mine: query.mine.is_some(),
        status: query.status,
        offset: query.offset,
        limit: query.limit.unwrap_or(DEFAULT_LIST_LIMIT),
    };
    let (tasks, total) = task_page(&state.store, &user.0, request).await?;
    let views = TaskViews::load(&state).await?;
    Ok(Json(TaskList {
        tasks: tasks.into_iter().map(|task| views.view(task)).collect(),
        total,
        offset: request.offset,
        limit: request.limit,
    }))
}

/// The one view of a task, as both doors show it.
pub async fn view(task: Task, state: &AppState) -> Result<TaskView, AppError> {
    Ok(TaskViews::load(state).await?.view(task))
}
