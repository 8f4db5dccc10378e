//! `GET /api/1/tasks/{id}/outcomes`: a bulk task's outcome for each person it targeted so
//! far, as CSV streamed a page at a time (a million rows are fine), for whoever may see the
//! task.

use app::api::ssr::AppState;
use app::api::tasks::ssr_impl::visible_task;
use app::error::{AppError, ErrorBody};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use bulkq_types::actions::ActionKind;
use caseload::outcomes::{CSV_HEADER, csv_page};

use super::tasks::parse_id;
use super::user::ApiUser;
use crate::csv_download::{as_csv_download, paged_csv_body};

/// Columns: `school_id`, `name` (both empty for an id that named nobody), `outcome` (one of
/// `changed`, `unchanged`, `out_of_scope`, `unknown`, `no_email_address`, `deferred`,
/// `failed`), `meaning` (the outcome in the task page's words) and `person_id`. An export
/// lists only the people it did not export (its file lists the rest).
#[utoipa::path(get, path = "/tasks/{id}/outcomes", tag = "tasks",
    params(("id" = String, Path, description = "The bulk task's id (a UUID)")),
    responses(
        (status = 200, description = "The outcomes, in person id order", content_type = "text/csv", body = String),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 404, description = "No such bulk task, or not yours", body = ErrorBody),
    ))]
pub async fn get_task_outcomes(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let id = parse_id(&id, "task")?;
    let task = visible_task(&state.store, &user.0, id).await?;
    let kind = ActionKind::of_component(&task.execution_component_name)
        .ok_or_else(|| AppError::NotFound("Bulk task".into()))?;
    let db = state.db.clone();
    let body = paged_csv_body(CSV_HEADER, move |after| {
        let db = db.clone();
        async move { csv_page(&db, id, kind, after).await }
    });
    as_csv_download(body.into_response(), &format!("bulkq-outcomes-{id}.csv"))
}
