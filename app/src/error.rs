//! `AppError`: the one error both doors answer with. Server functions send it as itself (the
//! browser decodes it); the JSON API sends it as `{"error", "fields"}` ([`ErrorBody`]). Each
//! variant's doc names its HTTP status, and [`AppError::status_code`] is the one mapping.

use std::collections::BTreeMap;

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// Why a request failed, in words that are safe to show the user.
///
/// Database and other internal failures are logged in full on the server and reach the
/// caller only as [`AppError::Internal`], so no internal detail leaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// 400: the request could not be read (a malformed body, path or header).
    #[error("{0}")]
    BadRequest(String),
    /// 401: no one is signed in (or the session expired).
    #[error("Please sign in.")]
    Unauthenticated,
    /// 401: sign-in with a wrong username or password (deliberately not saying which).
    #[error("Wrong username or password.")]
    BadCredentials,
    /// 403: signed in, but this is for someone else; the message says who.
    #[error("{0}")]
    Forbidden(String),
    /// 403: the user's password was reset; nothing but choosing a new one is allowed.
    #[error("Choose a new password first (on your account page).")]
    PasswordChangeRequired,
    /// 404: nothing by that id, or nothing the user may know exists; names what.
    #[error("{0} not found.")]
    NotFound(String),
    /// 409: it exists, but is not ready for this yet.
    #[error("{0}")]
    Conflict(String),
    /// 410: it existed and is gone for good.
    #[error("{0}")]
    Gone(String),
    /// 413: the body is larger than the server accepts.
    #[error("{0}")]
    TooLarge(String),
    /// 415: the body is not declared as JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: a well-formed request whose values are wrong: `message` says what to fix in
    /// words, `fields` by field name (empty when no single field is to blame).
    #[error("{message}")]
    Invalid {
        message: String,
        fields: BTreeMap<String, String>,
    },
    /// 429: too many sign-in attempts for one account in a short time.
    #[error("Too many sign-in attempts. Please wait a minute and try again.")]
    TooManyAttempts,
    /// 429: every live-update stream this user may hold on the node is open.
    #[error("At most {limit} live update streams per user; close another tab first.")]
    TooManyStreams { limit: usize },
    /// 500: something failed on the server; the details are in its log, found by the
    /// response's `x-request-id`.
    #[error("Something went wrong on the server. Please try again.")]
    Internal,
    /// 503: the node is too busy to take this request now (every password-hashing slot taken).
    #[error("The server is busy. Please try again in a moment.")]
    Busy,
    /// 503: the server did not answer within its request timeout.
    #[error("The server took more than {seconds} s to answer. Please try again.")]
    TimedOut { seconds: u64 },
    /// 400: a server function's arguments could not be decoded; in the browser, also a
    /// reply that never arrived or could not be read.
    #[error("Could not reach the server: {0}")]
    Transport(String),
}

impl AppError {
    /// A request whose values are wrong, said in one message with no field to blame.
    pub fn invalid(message: impl Into<String>) -> Self {
        AppError::Invalid {
            message: message.into(),
            fields: BTreeMap::new(),
        }
    }

    /// A request with wrong values, field by field; the message lists them all.
    pub fn invalid_fields(fields: impl IntoIterator<Item = (String, String)>) -> Self {
        let fields: BTreeMap<String, String> = fields.into_iter().collect();
        let message = fields
            .iter()
            .map(|(field, problem)| format!("{field}: {problem}."))
            .collect::<Vec<_>>()
            .join(" ");
        AppError::Invalid { message, fields }
    }

    /// An action only admins may take.
    pub fn forbidden() -> Self {
        AppError::Forbidden("You are not allowed to do that.".into())
    }

    /// The HTTP status a response carrying this error gets.
    pub fn status_code(&self) -> u16 {
        match self {
            AppError::BadRequest(_) | AppError::Transport(_) => 400,
            AppError::Unauthenticated | AppError::BadCredentials => 401,
            AppError::Forbidden(_) | AppError::PasswordChangeRequired => 403,
            AppError::NotFound(_) => 404,
            AppError::Conflict(_) => 409,
            AppError::Gone(_) => 410,
            AppError::TooLarge(_) => 413,
            AppError::UnsupportedMediaType(_) => 415,
            AppError::Invalid { .. } => 422,
            AppError::TooManyAttempts | AppError::TooManyStreams { .. } => 429,
            AppError::Internal => 500,
            AppError::Busy | AppError::TimedOut { .. } => 503,
        }
    }

    /// The JSON API's body for this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.to_string(),
            fields: match self {
                AppError::Invalid { fields, .. } => fields.clone(),
                _ => BTreeMap::new(),
            },
        }
    }
}

/// The body of every failed JSON API request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// What went wrong, in words for the caller (or its developer).
    pub error: String,
    /// For a request with invalid fields: each field's problem, by field name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
}

#[cfg(feature = "ssr")]
impl axum::response::IntoResponse for AppError {
    fn into_response(self) -> axum::response::Response {
        let status = http::StatusCode::from_u16(self.status_code())
            .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.body())).into_response()
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        // On the server this runs when a request could not be decoded: the client's fault,
        // so it must answer 400 rather than the framework's default 500.
        #[cfg(feature = "ssr")]
        if matches!(
            value,
            ServerFnErrorErr::Args(_)
                | ServerFnErrorErr::MissingArg(_)
                | ServerFnErrorErr::Deserialization(_)
                | ServerFnErrorErr::UnsupportedRequestMethod(_)
        ) && let Some(response) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>()
        {
            response.set_status(http::StatusCode::BAD_REQUEST);
        }
        AppError::Transport(value.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_body_names_the_fields_of_an_invalid_request() {
        let error = AppError::Invalid {
            message: "Reason: must not be empty.".into(),
            fields: BTreeMap::from([("reason".to_owned(), "must not be empty".to_owned())]),
        };
        assert_eq!(error.status_code(), 422);
        let body = serde_json::to_value(error.body()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "error": "Reason: must not be empty.",
                "fields": {"reason": "must not be empty"}
            })
        );
        let plain = serde_json::to_value(AppError::NotFound("Task".into()).body()).unwrap();
        assert_eq!(plain, serde_json::json!({"error": "Task not found."}));
    }
}
