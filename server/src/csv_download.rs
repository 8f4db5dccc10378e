//! The headers every CSV the server hands out carries: its type, and a download under a
//! name that says what it is.

use app::api::ssr::internal;
use app::error::AppError;
use axum::http::{HeaderValue, header};
use axum::response::Response;

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
