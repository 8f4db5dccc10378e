//! A JSON body extractor whose rejections are [`AppError`]s: malformed JSON is a 400, JSON
//! of the wrong shape a 422, a missing content type a 415, a body over the limit a 413, each
//! with axum's own explanation (which names the offending field and position).

use app::error::AppError;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

/// The request body, parsed as JSON into `T`.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(rejection_error(rejection)),
        }
    }
}

fn rejection_error(rejection: JsonRejection) -> AppError {
    let explanation = rejection.body_text();
    match rejection.status().as_u16() {
        413 => AppError::TooLarge(explanation),
        415 => AppError::UnsupportedMediaType(explanation),
        422 => AppError::invalid(explanation),
        _ => AppError::BadRequest(explanation),
    }
}
