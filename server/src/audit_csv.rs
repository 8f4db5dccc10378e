//! `GET /admin/audit.csv?<the Audit page's filters>`: every entry of the audit trail the
//! filters match, newest first, streamed a page at a time so a year of acts is never held
//! whole (admins).

use app::api::admin::ssr_impl::admin_only;
use app::api::audit::AUDIT_CSV_PATH;
use app::api::ssr::{AppState, internal};
use app::error::AppError;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bulkq_types::audit::AuditQuery;
use caseload::audit::{CSV_HEADER, csv_page};
use futures_util::{StreamExt, stream};

use crate::api::user::ApiUser;
use crate::csv_download::as_csv_download;

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
    // The state is the entry the next page starts after (`None` before the first), or the
    // end once a page comes back empty or fails.
    let pages = stream::unfold(Some(None), move |after| {
        let (db, search) = (db.clone(), search.clone());
        async move {
            match csv_page(&db, &search, after?).await {
                Ok(Some((csv, last))) => Some((Ok(Bytes::from(csv)), Some(Some(last)))),
                Ok(None) => None,
                Err(error) => {
                    let error = std::io::Error::other(internal(error).to_string());
                    Some((Err(error), None))
                }
            }
        }
    });
    let body = stream::iter([Ok(Bytes::from_static(CSV_HEADER))]).chain(pages);
    as_csv_download(Body::from_stream(body).into_response(), "bulkq-audit.csv")
}
