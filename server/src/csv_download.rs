//! The headers every CSV the server hands out carries: its type, and a download under a
//! name that says what it is; and the body of a CSV streamed a page at a time.

use std::future::Future;

use app::api::ssr::internal;
use app::error::AppError;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use caseload::CaseloadError;
use futures_util::{StreamExt, stream};

/// Marks `response` as a CSV file to save as `file_name` (ASCII, no quotes).
pub fn as_csv_download(mut response: Response, file_name: &str) -> Result<Response, AppError> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8"),
    );
    let disposition = format!("attachment; filename=\"{file_name}\"");
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&disposition).map_err(internal)?,
    );
    Ok(response)
}

/// A CSV body: `header`, then the pages `next_page` hands out, each read after the key the
/// one before ended at (`None` for the first), until one comes back empty. So a download of
/// a million rows is never held whole. A page that fails ends the body with an error, so
/// the client sees a broken download, not a short one.
pub fn paged_csv_body<K, F, Fut>(header: &'static [u8], next_page: F) -> Body
where
    K: Send + 'static,
    F: Fn(Option<K>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Option<(Vec<u8>, K)>, CaseloadError>> + Send + 'static,
{
    // The state is the key the next page starts after, or the end (`None`).
    let pages = stream::unfold(Some(None), move |after: Option<Option<K>>| {
        let page = after.map(&next_page);
        async move {
            match page?.await {
                Ok(Some((csv, last))) => Some((Ok(Bytes::from(csv)), Some(Some(last)))),
                Ok(None) => None,
                Err(error) => {
                    let error = std::io::Error::other(internal(error).to_string());
                    Some((Err(error), None))
                }
            }
        }
    });
    Body::from_stream(stream::iter([Ok(Bytes::from_static(header))]).chain(pages))
}
