//! Who makes an API request: the holder of a personal token (`Authorization: Bearer`), or
//! else the dashboard's signed-in user (the session cookie).
//!
//! A request that carries a token is judged by the token alone, cookie or not: a read-only
//! token may only read, and a token of a disabled user, a revoked or an expired one is no
//! one. Such requests need no CSRF check (`crate::csrf`): a browser never adds the header
//! by itself.

use app::api::login_throttle::ClientAddress;
use app::api::ssr::{AppState, client_of, internal, session_user};
use app::error::AppError;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use caseload::users::StaffUser;
use caseload::users::tokens::{record_use, token_holder, use_worth_recording};
use queue::WriteClass;
use tower_sessions::Session;

/// The staff user making the request, and the client it comes from (for the audit trail);
/// extracting it answers 401 for anonymous requests.
pub struct ApiUser(pub StaffUser, pub ClientAddress);

impl<S> FromRequestParts<S> for ApiUser
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let app = AppState::from_ref(state);
        let client = client_of(Some(parts));
        if let Some(secret) = bearer_token(&parts.headers)? {
            let user = token_user(&app, secret, &parts.method).await?;
            return Ok(ApiUser(user, client));
        }
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, message)| internal(message))?;
        let user = session_user(&session, &app.db)
            .await?
            .ok_or(AppError::Unauthenticated)?;
        if user.must_change_password {
            return Err(AppError::PasswordChangeRequired);
        }
        Ok(ApiUser(user, client))
    }
}

/// The secret of an `Authorization: Bearer` header, if the request has one; any other
/// `Authorization` is a credential we do not take (401).
pub fn bearer_token(headers: &HeaderMap) -> Result<Option<&str>, AppError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let scheme_and_secret = value.to_str().ok().and_then(|value| value.split_once(' '));
    match scheme_and_secret {
        Some((scheme, secret)) if scheme.eq_ignore_ascii_case("bearer") => Ok(Some(secret.trim())),
        _ => Err(AppError::Unauthenticated),
    }
}

/// The user a token acts for, if it is live and allows `method`.
async fn token_user(
    state: &AppState,
    secret: &str,
    method: &Method,
) -> Result<StaffUser, AppError> {
    let holder = token_holder(&state.db, secret)
        .await?
        .ok_or(AppError::Unauthenticated)?;
    let reads = matches!(*method, Method::GET | Method::HEAD);
    if !reads && !holder.token.can_act {
        return Err(AppError::Forbidden(
            "This token is read-only; make a read-and-act token to act.".into(),
        ));
    }
    if use_worth_recording(&holder.token, chrono::Utc::now()) {
        let txn = state
            .store
            .begin_write_as(WriteClass::Interactive)
            .await
            .map_err(internal)?;
        record_use(&*txn, holder.token.id).await?;
        txn.commit().await.map_err(internal)?;
    }
    Ok(holder.user)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn only_the_bearer_scheme_is_understood() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer_token(&headers), Ok(None));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer bq_x"),
        );
        assert_eq!(bearer_token(&headers), Ok(Some("bq_x")));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  bq_y "),
        );
        assert_eq!(bearer_token(&headers), Ok(Some("bq_y")));
        for other in ["Basic dXNlcjpwYXNz", "bq_x", ""] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(other));
            assert_eq!(
                bearer_token(&headers),
                Err(AppError::Unauthenticated),
                "{other}"
            );
        }
    }
}
