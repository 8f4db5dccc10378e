//! The people import's file transfers on the dashboard, for admins: the upload, streamed
//! from a plain HTML form into the database a chunk at a time (it works before the page
//! hydrates and never holds the file), and the error report, streamed out as CSV a page at
//! a time. The preview and the start are server functions (`app::api::imports`).

use app::api::admin::ssr_impl::admin_only;
use app::api::ssr::{AppState, internal};
use app::error::AppError;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use caseload::people_import::report::{REPORT_HEADER, report_page};
use caseload::people_import::upload::{UploadWriter, delete_upload, find_upload};
use caseload::users::StaffUser;
use futures_util::{StreamExt, stream};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use uuid::Uuid;

use crate::api::user::ApiUser;
use crate::csv_download::as_csv_download;

/// The form field holding the file.
const FILE_FIELD: &str = "file";

/// The routes, ready to merge into the dashboard's router.
pub fn routes<S: Clone + Send + Sync + 'static>(state: AppState) -> Router<S> {
    Router::new()
        .route(
            "/admin/imports/upload",
            // The file's size is capped while it streams in (`--import-max-bytes`).
            post(upload).layer(DefaultBodyLimit::disable()),
        )
        .route("/admin/imports/{id}/problems.csv", get(problems_csv))
        .with_state(state)
}

/// `POST /admin/imports/upload` (multipart, one `file` field): stores the file and sends
/// the browser to its preview, or back to the upload form with the reason it was refused.
async fn upload(
    State(state): State<AppState>,
    user: ApiUser,
    multipart: Multipart,
) -> Result<Redirect, AppError> {
    let admin = admin_only(user.0)?;
    Ok(match store_file(&state, &admin, multipart).await {
        Ok(id) => Redirect::to(&format!("/admin/imports/{id}")),
        Err(reason) => {
            let reason = utf8_percent_encode(&reason, NON_ALPHANUMERIC);
            Redirect::to(&format!("/admin/imports?error={reason}"))
        }
    })
}

/// Stores the form's file; on any failure deletes what was stored and says why.
async fn store_file(
    state: &AppState,
    admin: &StaffUser,
    mut multipart: Multipart,
) -> Result<Uuid, String> {
    let cut_off = |_| "The upload was cut off or is not a file form; try again.".to_owned();
    let mut field = loop {
        match multipart.next_field().await.map_err(cut_off)? {
            Some(field) if field.name() == Some(FILE_FIELD) => break field,
            Some(_) => continue,
            None => return Err("Choose a CSV file to upload.".to_owned()),
        }
    };
    let name = field.file_name().unwrap_or_default().to_owned();
    let store = &state.store;
    let mut writer = UploadWriter::begin(store, admin.id, &name, state.bulk.import_max_bytes)
        .await
        .map_err(|error| internal(error).to_string())?;
    let stored = async {
        while let Some(bytes) = field.chunk().await.map_err(cut_off)? {
            writer
                .write(store, &bytes)
                .await
                .map_err(|error| match error {
                    caseload::CaseloadError::Invalid(reason) => capitalised(&reason),
                    other => internal(other).to_string(),
                })?;
        }
        Ok(())
    }
    .await;
    let id = writer.id();
    let finished = match stored {
        Ok(()) if writer.is_empty() => Err("The file is empty.".to_owned()),
        Ok(()) => writer
            .finish(store)
            .await
            .map_err(|error| internal(error).to_string()),
        Err(reason) => Err(reason),
    };
    match finished {
        Ok(upload) => {
            tracing::info!(admin = %admin.username, upload = %upload.id, bytes = upload.size(),
                "people file uploaded");
            Ok(upload.id)
        }
        Err(reason) => {
            if let Err(error) = delete_upload(store.db(), id).await {
                tracing::warn!(%error, upload = %id, "could not delete a refused upload");
            }
            Err(reason)
        }
    }
}

fn capitalised(reason: &str) -> String {
    let mut chars = reason.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// `GET /admin/imports/{id}/problems.csv`: the import's error report.
async fn problems_csv(
    State(state): State<AppState>,
    user: ApiUser,
    Path(id): Path<Uuid>,
) -> Result<Response, AppError> {
    admin_only(user.0)?;
    if find_upload(&state.db, id).await?.is_none() {
        return Err(AppError::NotFound("Import".into()));
    }
    let db = state.db.clone();
    // The state is the line the next page starts after, or `None` once the report is done.
    let pages = stream::unfold(Some(0), move |after| {
        let db = db.clone();
        async move {
            let page = match report_page(&db, id, after?).await {
                Ok(Some(page)) => page,
                Ok(None) => return None,
                Err(error) => {
                    let error = std::io::Error::other(internal(error).to_string());
                    return Some((Err(error), None));
                }
            };
            Some((Ok(Bytes::from(page.csv)), Some(page.last_line)))
        }
    });
    let body = stream::iter([Ok(Bytes::from_static(REPORT_HEADER))]).chain(pages);
    as_csv_download(
        Body::from_stream(body).into_response(),
        &format!("bulkq-import-problems-{id}.csv"),
    )
}
