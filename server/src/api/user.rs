//! The signed-in user of an API request, from the dashboard's session cookie.

use app::api::ssr::{AppState, internal, session_user};
use app::error::AppError;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use caseload::users::StaffUser;
use tower_sessions::Session;

/// The staff user making the request; extracting it answers 401 for anonymous requests.
pub struct ApiUser(pub StaffUser);

impl<S> FromRequestParts<S> for ApiUser
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, message)| internal(message))?;
        let state = AppState::from_ref(state);
        session_user(&session, &state.db)
            .await?
            .map(ApiUser)
            .ok_or(AppError::Unauthenticated)
    }
}
