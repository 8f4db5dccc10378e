//! The bulk-action endpoints: one POST per action, each answering 202 with a reference to
//! the task it enqueued, and the download of a finished export.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use caseload::actions::spec::{
    EmailRequest, ExportRequest, StatusChangeRequest, SubmitError, WatchRequest,
};
use caseload::actions::{ActionRequest, EXPORT, export_file, submit};
use queue::TaskStatus;
use tower::ServiceExt;
use tower_http::services::ServeFile;
use uuid::Uuid;

use super::error::ApiError;
use super::json::ApiJson;
use super::tasks::TaskReference;
use super::user::ApiUser;
use app::api::ssr::AppState;

/// `POST /api/1/caseload/exports`.
pub async fn post_export(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<ExportRequest>,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    accept(&state, &user, ActionRequest::Export(request)).await
}

/// `POST /api/1/caseload/program-status-changes`.
pub async fn post_status_change(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<StatusChangeRequest>,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    accept(&state, &user, ActionRequest::ProgramStatusChange(request)).await
}

/// `POST /api/1/caseload/watches`.
pub async fn post_watch(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<WatchRequest>,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    accept(&state, &user, ActionRequest::Watch(request)).await
}

/// `POST /api/1/caseload/unwatches`.
pub async fn post_unwatch(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<WatchRequest>,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    accept(&state, &user, ActionRequest::Unwatch(request)).await
}

/// `POST /api/1/caseload/emails`.
pub async fn post_email(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<EmailRequest>,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    accept(&state, &user, ActionRequest::Email(request)).await
}

async fn accept(
    state: &AppState,
    user: &ApiUser,
    request: ActionRequest,
) -> Result<(StatusCode, Json<TaskReference>), ApiError> {
    let task = submit(&state.store, &user.0, request, state.bulk.export_row_cap).await?;
    Ok((StatusCode::ACCEPTED, Json(TaskReference::from(&task))))
}

impl From<SubmitError> for ApiError {
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::Invalid(fields) => ApiError::invalid(fields),
            SubmitError::Caseload(error) => error.into(),
            SubmitError::Queue(error) => error.into(),
        }
    }
}

/// `GET /api/1/caseload/exports/{task_id}/file`: the CSV of a completed export, for the
/// user who asked for it. Other staff get a 404 (the export's existence stays private);
/// admins, who can see every task, get a 403: they repair tasks, not read their data.
pub async fn get_export_file(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
    request: Request,
) -> Result<Response, ApiError> {
    let id =
        Uuid::parse_str(&id).map_err(|_| ApiError::bad_request("The export id is not a UUID."))?;
    let task = match state.store.task_get(id).await? {
        Some(task) if task.execution_component_name == EXPORT && user.may_see(task.owner_id) => {
            task
        }
        _ => return Err(ApiError::not_found("export")),
    };
    if task.owner_id != user.0.id {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Only the person who asked for an export may download it.",
        ));
    }
    if task.workflow_status != TaskStatus::Completed {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "The export is not finished yet (it is {}).",
                task.workflow_status.as_str()
            ),
        ));
    }
    let path = export_file(&state.bulk.exports_dir, id);
    if !path.is_file() {
        return Err(ApiError::new(
            StatusCode::GONE,
            "The export file is no longer on this server.",
        ));
    }
    let mut response = ServeFile::new(path)
        .oneshot(request)
        .await
        .map_err(ApiError::internal)?
        .map(Body::new);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    let disposition = format!("attachment; filename=\"bulkq-export-{id}.csv\"");
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&disposition).map_err(ApiError::internal)?,
    );
    Ok(response.into_response())
}
