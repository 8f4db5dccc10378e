//! Task status for API clients: one task, or a page of the caller's tasks.
//!
//! What a client sees of a task is deliberately light: never the checkpoint
//! (`execution_state`) or the error detail (`workflow_status_desc`, for admins in the
//! dashboard), and not the spec, which can hold thousands of ids.

use app::api::ssr::AppState;
use app::api::tasks::ssr_impl::{TaskViews, act, act_on_one, reschedule, task_page, visible_task};
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::extract::{Path, Query, State};
use bulkq_types::task::{ActOutcome, ActRequest, RescheduleRequest, TaskAct, TaskView};
use bulkq_types::task_query::{TaskPage, TaskQuery};
use caseload::users::StaffUser;
use queue::Task;
use uuid::Uuid;

use super::json::ApiJson;
use super::user::ApiUser;

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
    Ok(Json(view(task, &state, &user.0).await?))
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
    if !act_on_one(&state, &user.0, user.1, TaskAct::Cancel, id, "").await? {
        return Err(AppError::Conflict("The task has already finished.".into()));
    }
    let task = visible_task(&state.store, &user.0, id).await?;
    Ok(Json(view(task, &state, &user.0).await?))
}

/// `POST /api/1/tasks/{id}/schedule`: moves a waiting task to another time or priority, or
/// runs it now (a time already past), the owner's own or, for admins, anyone's. Staff keep
/// to the priorities the dashboard offers.
#[utoipa::path(post, path = "/tasks/{id}/schedule", tag = "tasks", request_body = RescheduleRequest,
    params(("id" = String, Path, description = "The task's id (a UUID)")),
    responses(
        (status = 200, description = "Moved: the task as it is now", body = TaskView),
        (status = 400, description = "The id is not a UUID, or an unreadable body", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such task, or not yours", body = ErrorBody),
        (status = 409, description = "The task is no longer waiting", body = ErrorBody),
        (status = 413, description = "The body is over 2 MB", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 422, description = "A time or priority out of range, or neither given", body = ErrorBody),
    ))]
pub async fn reschedule_task(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<RescheduleRequest>,
) -> Result<Json<TaskView>, AppError> {
    let id = parse_id(&id, "task")?;
    let task = reschedule(&state, &user.0, user.1, id, request).await?;
    Ok(Json(view(task, &state, &user.0).await?))
}

/// `POST /api/1/tasks/act`: cancels (owners and admins), retries, requeues or abandons
/// (admins) the ticked tasks or every task a list's filters match. Tasks the act does not
/// apply to, or that the caller may not see, are skipped.
#[utoipa::path(post, path = "/tasks/act", tag = "tasks", request_body = ActRequest,
    responses(
        (status = 200, description = "How many tasks moved and how many were skipped", body = ActOutcome),
        (status = 400, description = "Unreadable body", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 413, description = "The body is over 2 MB", body = ErrorBody),
        (status = 415, description = "The body is not JSON", body = ErrorBody),
        (status = 403, description = "An act for admins only", body = ErrorBody),
        (status = 422, description = "A bad filter, selection or reason", body = ErrorBody),
    ))]
pub async fn act_on_tasks(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<ActRequest>,
) -> Result<Json<ActOutcome>, AppError> {
    Ok(Json(act(&state, &user.0, user.1, request).await?))
}

/// A path's id, or a 400 that says which id is not a UUID.
pub fn parse_id(text: &str, what: &str) -> Result<Uuid, AppError> {
    Uuid::parse_str(text).map_err(|_| AppError::BadRequest(format!("The {what} id is not a UUID.")))
}

/// `GET /api/1/tasks?status=…&action=…&owner=…&created_from=…&created_to=…&id=…&before=…`:
/// a page of the caller's tasks (anyone's for admins), newest first; `next` is the
/// `before` of the page after.
#[utoipa::path(get, path = "/tasks", tag = "tasks", params(TaskQuery),
    responses(
        (status = 200, description = "A page of tasks, newest first", body = TaskPage),
        (status = 400, description = "Unreadable parameters", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 422, description = "A parameter out of range", body = ErrorBody),
    ))]
pub async fn list_tasks(
    State(state): State<AppState>,
    user: ApiUser,
    query: Result<Query<TaskQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TaskPage>, AppError> {
    let Query(query) = query.map_err(|rejection| AppError::BadRequest(rejection.body_text()))?;
    Ok(Json(task_page(&state, &user.0, &query).await?))
}

/// The one view of a task, as both doors show it to `viewer`.
pub async fn view(task: Task, state: &AppState, viewer: &StaffUser) -> Result<TaskView, AppError> {
    Ok(TaskViews::load(state, viewer.id).await?.view(task))
}
