//! `AppError`: the one error type that crosses the wire between server and browser.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// Why a server function failed, in words that are safe to show the user.
///
/// Database and other internal failures are logged in full on the server and reach the
/// browser only as [`AppError::Internal`], so no internal detail leaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// No one is signed in (or the session expired).
    #[error("Please sign in.")]
    Unauthenticated,
    /// Signed in, but the role does not allow this.
    #[error("You are not allowed to do that.")]
    Forbidden,
    /// Nothing by that id, or nothing the user may know exists.
    #[error("{0} not found.")]
    NotFound(String),
    /// Sign-in with a wrong username or password (deliberately not saying which).
    #[error("Wrong username or password.")]
    BadCredentials,
    /// Too many sign-in attempts for one account in a short time.
    #[error("Too many sign-in attempts. Please wait a minute and try again.")]
    TooManyAttempts,
    /// The node is too busy to take this request now (every password-hashing slot taken).
    #[error("The server is busy. Please try again in a moment.")]
    Busy,
    /// The request was malformed; the message says what to fix.
    #[error("{0}")]
    Invalid(String),
    /// Something failed on the server; the details are in the server log.
    #[error("Something went wrong on the server. Please try again.")]
    Internal,
    /// The request did not reach the server function or its reply could not be read.
    #[error("Could not reach the server: {0}")]
    Transport(String),
}

impl AppError {
    /// The HTTP status a response carrying this error gets.
    pub fn status_code(&self) -> u16 {
        match self {
            AppError::Unauthenticated | AppError::BadCredentials => 401,
            AppError::Forbidden => 403,
            AppError::NotFound(_) => 404,
            AppError::Invalid(_) => 422,
            AppError::TooManyAttempts => 429,
            AppError::Internal => 500,
            AppError::Busy => 503,
            AppError::Transport(_) => 400,
        }
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
