//! The bulk-action endpoints: one POST per action, each answering 202 with a reference to
//! the task it enqueued, and the download of a finished export.

use app::api::bulk::ssr_impl::submit_action;
use app::api::ssr::{AppState, internal};
use app::api::tasks::ssr_impl::visible_task;
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use bulkq_types::actions::ActionKind;
use bulkq_types::export::ExportFileState;
use bulkq_types::requests::{
    ActionRequest, CoachReassignmentRequest, EarlyAlertRequest, EmailRequest, ExportRequest,
    StatusChangeRequest, WatchRequest,
};
use bulkq_types::task::TaskView;
use caseload::actions::export_file;
use caseload::actions::export_files::export_file_state;
use caseload::actions::idempotency::IdempotencyKey;
use tower::ServiceExt;
use tower_http::services::ServeFile;
use utoipa::IntoParams;

use super::ApiState;
use super::json::ApiJson;
use super::tasks::{parse_id, view};
use super::user::ApiUser;
use crate::csv_download::as_csv_download;

/// One bulk action's endpoint: `$name` handles `POST /api/1$path`, reading a `$request` and
/// enqueueing it as `ActionRequest::$action`. Every action answers alike, so the handler and
/// its OpenAPI description are written once, here.
macro_rules! bulk_action_endpoint {
    ($name:ident, $path:tt, $request:ident, $action:ident) => {
        #[doc = concat!("`POST /api/1", $path, "`.")]
        #[utoipa::path(post, path = $path, tag = "bulk actions", request_body = $request,
            params(IdempotencyHeader),
            responses(
                (status = 202, description = "The task was enqueued (or found again by its key)", body = TaskView),
                (status = 400, description = "The body is not JSON", body = ErrorBody),
                (status = 401, description = "Not signed in", body = ErrorBody),
                (status = 403, description = "A cross-site request from a browser (plain text)"),
                (status = 413, description = "The body is over 2 MB", body = ErrorBody),
                (status = 415, description = "The body is not declared as JSON", body = ErrorBody),
                (status = 422, description = "Invalid fields, each named in `fields`; or an \
                    `Idempotency-Key` sent before with another request", body = ErrorBody),
            ))]
        pub async fn $name(
            State(state): State<AppState>,
            user: ApiUser,
            key: IdempotencyHeader,
            ApiJson(request): ApiJson<$request>,
        ) -> Result<(StatusCode, Json<TaskView>), AppError> {
            accept(&state, &user, ActionRequest::$action(request), key).await
        }
    };
}

bulk_action_endpoint!(post_export, "/caseload/exports", ExportRequest, Export);
bulk_action_endpoint!(
    post_status_change,
    "/caseload/program-status-changes",
    StatusChangeRequest,
    ProgramStatusChange
);
bulk_action_endpoint!(post_watch, "/caseload/watches", WatchRequest, Watch);
bulk_action_endpoint!(post_unwatch, "/caseload/unwatches", WatchRequest, Unwatch);
bulk_action_endpoint!(post_email, "/caseload/emails", EmailRequest, Email);
bulk_action_endpoint!(
    post_coach_reassignment,
    "/caseload/coach-reassignments",
    CoachReassignmentRequest,
    CoachReassignment
);
bulk_action_endpoint!(
    post_early_alert,
    "/caseload/early-alerts",
    EarlyAlertRequest,
    EarlyAlert
);

/// The bulk actions' part of the API's contract, merged into its document
/// (`super::openapi`).
#[derive(utoipa::OpenApi)]
#[openapi(paths(
    post_export,
    post_status_change,
    post_watch,
    post_unwatch,
    post_email,
    post_coach_reassignment,
    post_early_alert
))]
pub struct BulkActionPaths;

/// The endpoint submitting `kind`, at `kind.api_path()` (where its OpenAPI entry above
/// documents it; the contract test checks that the two agree).
pub fn submit_route(kind: ActionKind) -> MethodRouter<ApiState> {
    match kind {
        ActionKind::Export => post(post_export),
        ActionKind::ProgramStatusChange => post(post_status_change),
        ActionKind::Watch => post(post_watch),
        ActionKind::Unwatch => post(post_unwatch),
        ActionKind::Email => post(post_email),
        ActionKind::CoachReassignment => post(post_coach_reassignment),
        ActionKind::EarlyAlert => post(post_early_alert),
    }
}

async fn accept(
    state: &AppState,
    user: &ApiUser,
    request: ActionRequest,
    key: IdempotencyHeader,
) -> Result<(StatusCode, Json<TaskView>), AppError> {
    let task = submit_action(state, &user.0, request, key.0.as_ref()).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(view(task, state, &user.0).await?),
    ))
}

/// The `Idempotency-Key` header of a bulk-action POST (see
/// `caseload::actions::idempotency`): a repeated request with the key answers with the task
/// the first one made.
#[derive(Debug, IntoParams)]
#[into_params(names("Idempotency-Key"), parameter_in = Header)]
pub struct IdempotencyHeader(
    /// Names this submission (a UUID, say; 1 to 200 visible ASCII characters). Sent again
    /// with the same request, the reply names the same task; with another request, 422.
    #[param(value_type = Option<String>)]
    Option<IdempotencyKey>,
);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyHeader {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        let Some(value) = parts.headers.get(IDEMPOTENCY_KEY) else {
            return Ok(Self(None));
        };
        let key = value
            .to_str()
            .map_err(|error| error.to_string())
            .and_then(IdempotencyKey::parse)
            .map_err(|problem| AppError::BadRequest(format!("Idempotency-Key: {problem}.")))?;
        Ok(Self(Some(key)))
    }
}

/// The header's name.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `GET /api/1/caseload/exports/{task_id}/file`: the CSV of a completed export, for the
/// user who asked for it. Other staff get a 404 (the export's existence stays private);
/// admins, who can see every task, get a 403: they repair tasks, not read their data.
#[utoipa::path(get, path = "/caseload/exports/{id}/file", tag = "bulk actions",
    params(("id" = String, Path, description = "The export task's id (a UUID)")),
    responses(
        (status = 200, description = "The CSV", content_type = "text/csv", body = String),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Someone else's export (admins)", body = ErrorBody),
        (status = 404, description = "No such export, or not visible to the caller", body = ErrorBody),
        (status = 409, description = "The export has not finished", body = ErrorBody),
        (status = 410, description = "The export expired, or its file is gone", body = ErrorBody),
    ))]
pub async fn get_export_file(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
    request: Request,
) -> Result<Response, AppError> {
    let id = parse_id(&id, "export")?;
    let not_found = || AppError::NotFound("Export".into());
    let task = match visible_task(&state.store, &user.0, id).await {
        Ok(task) => task,
        Err(AppError::NotFound(_)) => return Err(not_found()),
        Err(other) => return Err(other),
    };
    let now = state.store.clock().now();
    match export_file_state(&task, user.0.id, state.bulk.export_retention, now) {
        Some(ExportFileState::Ready { .. }) => {}
        None => return Err(not_found()),
        Some(ExportFileState::NotYours) => {
            return Err(AppError::Forbidden(
                "Only the person who asked for an export may download it.".into(),
            ));
        }
        Some(ExportFileState::NotFinished) => {
            return Err(AppError::Conflict(format!(
                "The export is not finished yet (it is {}).",
                task.workflow_status.as_str()
            )));
        }
        Some(ExportFileState::Expired { at }) => {
            return Err(AppError::Gone(format!(
                "The export expired at {} and its file was deleted; run the export again.",
                at.format("%Y-%m-%d %H:%M UTC")
            )));
        }
    }
    let path = export_file(&state.bulk.exports_dir, id);
    if !path.is_file() {
        return Err(AppError::Gone(
            "The export file is no longer on this server.".into(),
        ));
    }
    let response = ServeFile::new(path)
        .oneshot(request)
        .await
        .map_err(internal)?
        .map(Body::new)
        .into_response();
    as_csv_download(response, &format!("bulkq-export-{id}.csv"))
}
