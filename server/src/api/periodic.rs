//! Periodic jobs for API clients (admins): the list with each job's lock times, last run and
//! skipped runs, and run now, pause and resume. Thin adapters over `app::api::admin`, which
//! Queue health's buttons call too.

use app::api::admin::PeriodicJobRow;
use app::api::admin::ssr_impl::{admin_only, periodic_rows, run_periodic_now, set_periodic_paused};
use app::api::ssr::AppState;
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::user::ApiUser;

/// `GET /api/1/periodic-jobs`.
#[utoipa::path(get, path = "/periodic-jobs", tag = "periodic jobs",
    responses(
        (status = 200, description = "Every periodic job of the cluster, by name", body = Vec<PeriodicJobRow>),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
    ))]
pub async fn list_periodic_jobs(
    State(state): State<AppState>,
    user: ApiUser,
) -> Result<Json<Vec<PeriodicJobRow>>, AppError> {
    admin_only(user.0)?;
    Ok(Json(periodic_rows(&state.store).await?))
}

/// `POST /api/1/periodic-jobs/{name}/run`: due now; this node runs it within moments.
#[utoipa::path(post, path = "/periodic-jobs/{name}/run", tag = "periodic jobs",
    params(("name" = String, Path, description = "The job's name, e.g. `queue.prune`")),
    responses(
        (status = 204, description = "Due now"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 409, description = "No such job, or it is paused", body = ErrorBody),
        (status = 422, description = "Not a job's name", body = ErrorBody),
    ))]
pub async fn run_periodic_job(
    State(state): State<AppState>,
    user: ApiUser,
    Path(name): Path<String>,
) -> Result<StatusCode, AppError> {
    run_periodic_now(&state, user.0, user.1, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/1/periodic-jobs/{name}/pause`: no node runs it until it is resumed.
#[utoipa::path(post, path = "/periodic-jobs/{name}/pause", tag = "periodic jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 204, description = "Paused (or already was)"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 422, description = "Not a job's name", body = ErrorBody),
    ))]
pub async fn pause_periodic_job(
    State(state): State<AppState>,
    user: ApiUser,
    Path(name): Path<String>,
) -> Result<StatusCode, AppError> {
    set_periodic_paused(&state, user.0, user.1, &name, true).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/1/periodic-jobs/{name}/resume`: back on its schedule; a due time that passed
/// while paused runs once, at once.
#[utoipa::path(post, path = "/periodic-jobs/{name}/resume", tag = "periodic jobs",
    params(("name" = String, Path, description = "The job's name")),
    responses(
        (status = 204, description = "Resumed (or was not paused)"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 422, description = "Not a job's name", body = ErrorBody),
    ))]
pub async fn resume_periodic_job(
    State(state): State<AppState>,
    user: ApiUser,
    Path(name): Path<String>,
) -> Result<StatusCode, AppError> {
    set_periodic_paused(&state, user.0, user.1, &name, false).await?;
    Ok(StatusCode::NO_CONTENT)
}
