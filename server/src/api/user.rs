//! The signed-in user of an API request, from the dashboard's session cookie.

use app::api::ssr::SESSION_USER_ID;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use caseload::users::{Role, StaffUser};
use tower_sessions::Session;
use uuid::Uuid;

use super::error::ApiError;
use app::api::ssr::AppState;

/// The staff user making the request; extracting it answers 401 for anonymous requests.
pub struct ApiUser(pub StaffUser);

impl ApiUser {
    pub fn is_admin(&self) -> bool {
        self.0.role == Role::Admin
    }

    /// Whether this user may see a task owned by `owner_id`: their own, or any as an admin.
    pub fn may_see(&self, owner_id: Uuid) -> bool {
        self.is_admin() || self.0.id == owner_id
    }
}

impl<S> FromRequestParts<S> for ApiUser
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, message)| ApiError::internal(message))?;
        let state = AppState::from_ref(state);
        let user_id = session
            .get::<Uuid>(SESSION_USER_ID)
            .await
            .map_err(ApiError::internal)?
            .ok_or_else(ApiError::unauthenticated)?;
        caseload::users::find_user(&state.db, user_id)
            .await?
            .map(ApiUser)
            .ok_or_else(ApiError::unauthenticated)
    }
}
