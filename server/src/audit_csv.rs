//! `GET /admin/audit.csv?<the Audit page's filters>`: every entry of the audit trail the
//! filters match, newest first, streamed a page at a time so a year of acts is never held
//! whole (admins).

use app::api::admin::ssr_impl::admin_only;
use app::api::audit::AUDIT_CSV_PATH;
use app::api::ssr::AppState;
use app::error::AppError;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bulkq_types::audit::AuditQuery;
use caseload::audit::{CSV_HEADER, csv_page};

use crate::api::user::ApiUser;
use crate::csv_download::{as_csv_download, paged_csv_body};

/// The download's route, ready to merge into a router with any state.
pub fn routes<S: Clone + Send + Sync + 'static>(state: AppState) -> Router<S> {
    Router::new()
        .route(AUDIT_CSV_PATH, get(audit_csv))
        .with_state(state)
}

async fn audit_csv(
    State(state): State<AppState>,
    user: ApiUser,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    admin_only(user.0)?;
    let query = AuditQuery::from_query_string(query.as_deref().unwrap_or_default())
        .map_err(AppError::BadRequest)?;
    let search = query.whole().check().map_err(AppError::invalid_fields)?;
    let db = state.db.clone();
    let body = paged_csv_body(CSV_HEADER, move |after| {
        let (db, search) = (db.clone(), search.clone());
        async move { csv_page(&db, &search, after).await }
    });
    as_csv_download(body.into_response(), "bulkq-audit.csv")
}
