//! Early alerts for programs: a person's alerts, closing one, and the reasons admins manage
//! (the bulk action raising alerts is in [`super::bulk`]).

use app::api::alerts::ssr_impl;
use app::api::ssr::AppState;
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use bulkq_types::alerts::{AlertReason, EarlyAlert, NewAlertReason};
use serde::Deserialize;
use utoipa::IntoParams;

use super::json::ApiJson;
use super::tasks::parse_id;
use super::user::ApiUser;

/// Which reasons to list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(default, deny_unknown_fields)]
pub struct ReasonQuery {
    /// Also the retired ones.
    pub retired: bool,
}

/// `GET /api/1/alert-reasons`.
#[utoipa::path(get, path = "/alert-reasons", tag = "early alerts", params(ReasonQuery),
    responses(
        (status = 200, description = "The reasons, in pick-list order", body = Vec<AlertReason>),
        (status = 400, description = "Unreadable parameters", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
    ))]
pub async fn list_reasons(
    State(state): State<AppState>,
    _user: ApiUser,
    Query(query): Query<ReasonQuery>,
) -> Result<Json<Vec<AlertReason>>, AppError> {
    Ok(Json(ssr_impl::reasons(&state, query.retired).await?))
}

/// `POST /api/1/alert-reasons` (admins).
#[utoipa::path(post, path = "/alert-reasons", tag = "early alerts", request_body = NewAlertReason,
    responses(
        (status = 201, description = "Added (or a retired reason of that name brought back)", body = AlertReason),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin, a read-only token, or a cross-site \
            request from a browser", body = ErrorBody),
        (status = 413, description = "The body is over 2 MB", body = ErrorBody),
        (status = 415, description = "The body is not declared as JSON", body = ErrorBody),
        (status = 422, description = "A bad name, or one in use", body = ErrorBody),
    ))]
pub async fn add_reason(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<NewAlertReason>,
) -> Result<(StatusCode, Json<AlertReason>), AppError> {
    let reason = ssr_impl::add_reason(&state, user.0, user.1, &request.name).await?;
    Ok((StatusCode::CREATED, Json(reason)))
}

/// `POST /api/1/alert-reasons/{code}/retire` (admins).
#[utoipa::path(post, path = "/alert-reasons/{code}/retire", tag = "early alerts",
    params(("code" = String, Path, description = "The reason's code")),
    responses(
        (status = 204, description = "Retired: no new alert may give it"),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin, a read-only token, or a cross-site \
            request from a browser", body = ErrorBody),
        (status = 404, description = "No reason in use has that code", body = ErrorBody),
    ))]
pub async fn retire_reason(
    State(state): State<AppState>,
    user: ApiUser,
    Path(code): Path<String>,
) -> Result<StatusCode, AppError> {
    ssr_impl::retire_reason(&state, user.0, user.1, &code).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/1/people/{id}/early-alerts`.
#[utoipa::path(get, path = "/people/{id}/early-alerts", tag = "early alerts",
    params(("id" = String, Path, description = "The person's id (a UUID)")),
    responses(
        (status = 200, description = "The person's alerts, open ones first, newest first", body = Vec<EarlyAlert>),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
    ))]
pub async fn person_alerts(
    State(state): State<AppState>,
    _user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<Vec<EarlyAlert>>, AppError> {
    let id = parse_id(&id, "person")?;
    Ok(Json(ssr_impl::alerts_of(&state, id).await?))
}

/// `POST /api/1/early-alerts/{id}/close`.
#[utoipa::path(post, path = "/early-alerts/{id}/close", tag = "early alerts",
    params(("id" = String, Path, description = "The alert's id (a UUID)")),
    responses(
        (status = 200, description = "Closed (closing a closed alert changes nothing)", body = EarlyAlert),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "A read-only token, or a cross-site request from a \
            browser", body = ErrorBody),
        (status = 404, description = "No such alert of a person the caller may act on", body = ErrorBody),
    ))]
pub async fn close_alert(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<String>,
) -> Result<Json<EarlyAlert>, AppError> {
    let id = parse_id(&id, "alert")?;
    Ok(Json(ssr_impl::close(&state, &user.0, id).await?))
}
