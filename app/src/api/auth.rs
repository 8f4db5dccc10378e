//! Signing in and out, and who is signed in.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// The signed-in user as pages see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedInUser {
    pub id: Uuid,
    pub username: String,
    pub display_name: String,
    pub is_admin: bool,
    /// Their password was reset: the account page is all they may use until they change it.
    pub must_change_password: bool,
}

/// Checks the credentials, starts a session for the user and sends the browser to the
/// caseload.
#[server(endpoint = "sign_in")]
pub async fn sign_in(username: String, password: String) -> Result<(), AppError> {
    use self::ssr_impl::*;
    crate::api::ssr::respond(start_session(username, password)).await
}

/// Ends the session and sends the browser to the sign-in page.
#[server(endpoint = "sign_out")]
pub async fn sign_out() -> Result<(), AppError> {
    use self::ssr_impl::*;
    crate::api::ssr::respond(end_session()).await
}

/// The signed-in user, or `None` when no one is.
#[server(endpoint = "current_user")]
pub async fn get_current_user() -> Result<Option<SignedInUser>, AppError> {
    crate::api::ssr::respond(async {
        Ok(crate::api::ssr::current_user()
            .await?
            .map(ssr_impl::signed_in_user))
    })
    .await
}

#[cfg(feature = "ssr")]
mod ssr_impl {
    use bulkq_types::text::{Lines, control_character_problem};
    use caseload::users::{Role, StaffUser};

    use leptos::prelude::use_context;

    use super::SignedInUser;
    use crate::api::login_throttle::Attempt;
    use crate::api::ssr::{
        SESSION_MUST_CHANGE_PASSWORD, SESSION_USER_ID, client_of, db, internal, session, state,
    };
    use crate::error::AppError;

    /// Longest username or password accepted at sign-in; longer input is not a real attempt.
    const MAX_CREDENTIAL_LEN: usize = 256;

    pub async fn start_session(username: String, password: String) -> Result<(), AppError> {
        if username.trim().is_empty() || password.is_empty() {
            return Err(AppError::invalid("Enter your username and password."));
        }
        if username.len() > MAX_CREDENTIAL_LEN || password.len() > MAX_CREDENTIAL_LEN {
            return Err(AppError::BadCredentials);
        }
        if let Some(problem) = control_character_problem(&username, Lines::One) {
            return Err(AppError::invalid(format!("Username: {problem}.")));
        }
        let state = state()?;
        let Some(_turn) = state.login_throttle.hashing_turn().await else {
            tracing::warn!("sign-in refused: every password-hashing slot stayed busy");
            return Err(AppError::Busy);
        };
        let device_key = state
            .login_throttle
            .device_key(&state.store)
            .await
            .map_err(internal)?;
        let parts = use_context::<http::request::Parts>();
        let cookies = parts.iter().flat_map(|parts| {
            parts
                .headers
                .get_all(http::header::COOKIE)
                .iter()
                .filter_map(|value| value.to_str().ok())
        });
        let attempt = Attempt::new(
            &username,
            client_of(parts.as_ref()),
            device_key.recognise(&username, cookies),
        );
        let db = db()?;
        if attempt.refused(&db).await.map_err(internal)? {
            tracing::warn!(user = %username.trim(), ?attempt, "sign-in attempts throttled");
            return Err(AppError::TooManyAttempts);
        }
        let Some(user) = caseload::users::authenticate(&db, &username, &password).await? else {
            attempt
                .record_failure(&state.store)
                .await
                .map_err(internal)?;
            return Err(AppError::BadCredentials);
        };
        let session = session().await?;
        // A new id on sign-in, so a session id planted before sign-in is worthless after it.
        // A browser that brought no session has no id to replace: its session gets a fresh
        // one when it is first stored, and cycling would only delete a row that was never
        // written, a write transaction that waits its turn on SQLite (ADR 0019).
        if session.id().is_some() {
            session
                .cycle_id()
                .await
                .map_err(|e| internal(format!("cycling the session id failed: {e}")))?;
        }
        session
            .insert(SESSION_USER_ID, user.id)
            .await
            .map_err(|e| internal(format!("writing the session failed: {e}")))?;
        if user.must_change_password {
            session
                .insert(SESSION_MUST_CHANGE_PASSWORD, true)
                .await
                .map_err(|e| internal(format!("writing the session failed: {e}")))?;
        }
        if let (Some(response), Ok(cookie)) = (
            use_context::<leptos_axum::ResponseOptions>(),
            http::HeaderValue::from_str(&device_key.cookie_for(&username, state.secure_cookies)),
        ) {
            response.append_header(http::header::SET_COOKIE, cookie);
        }
        tracing::info!(user = %user.username, "signed in");
        leptos_axum::redirect(if user.must_change_password {
            "/account"
        } else {
            "/"
        });
        Ok(())
    }

    pub async fn end_session() -> Result<(), AppError> {
        session()
            .await?
            .flush()
            .await
            .map_err(|e| internal(format!("ending the session failed: {e}")))?;
        leptos_axum::redirect("/login");
        Ok(())
    }

    pub fn signed_in_user(user: StaffUser) -> SignedInUser {
        SignedInUser {
            id: user.id,
            is_admin: user.role == Role::Admin,
            must_change_password: user.must_change_password,
            username: user.username,
            display_name: user.display_name,
        }
    }
}
