//! The JSON API's error: a status and a message a program (or its developer) can act on.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// A failed API request.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    /// Per-field messages for a request that failed validation.
    fields: BTreeMap<String, String>,
}

/// The body of every failed API request.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, in words for the caller's developer.
    pub error: String,
    /// For a request with invalid fields: each field's problem, by field name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            fields: BTreeMap::new(),
        }
    }

    pub fn unauthenticated() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Sign in first.")
    }

    /// Something that does not exist, or that the caller may not know exists.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("No such {what}."))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// A well-formed request whose values are wrong; `fields` says which and why.
    pub fn invalid(fields: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: "The request has invalid fields.".into(),
            fields: fields.into_iter().collect(),
        }
    }

    /// Logs the full error and answers with a message that reveals nothing.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(%error, "internal error in the JSON API");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong on the server.",
        )
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.message,
            fields: self.fields,
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<queue::QueueError> for ApiError {
    fn from(error: queue::QueueError) -> Self {
        match error {
            queue::QueueError::Invalid(message) => ApiError::bad_request(message),
            other => ApiError::internal(other),
        }
    }
}

impl From<caseload::CaseloadError> for ApiError {
    fn from(error: caseload::CaseloadError) -> Self {
        match error {
            caseload::CaseloadError::Invalid(message) => ApiError::bad_request(message),
            other => ApiError::internal(other),
        }
    }
}
