//! Staff accounts: what admins do to them (the Users page) and what each user does to their
//! own (the Account page: password and personal API tokens).

use bulkq_types::accounts::{Account, Role, TaskEmails, TokenInfo};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// A generated password, shown to the admin once, to hand to its user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OneTimePassword {
    pub username: String,
    pub password: String,
}

/// A new token with its secret, shown to its owner once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTokenSecret {
    pub token: TokenInfo,
    pub secret: String,
}

/// Every staff account (admins only).
#[server(endpoint = "users")]
pub async fn list_accounts() -> Result<Vec<Account>, AppError> {
    use crate::api::ssr::{db, require_admin, respond};
    respond(async {
        require_admin().await?;
        Ok(caseload::users::accounts::list_accounts(&db()?).await?)
    })
    .await
}

/// Creates an account with a one-time password its user changes at first sign-in.
#[server(endpoint = "users/create")]
pub async fn create_account(
    username: String,
    display_name: String,
    role: Role,
) -> Result<OneTimePassword, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::create(username, display_name, role)).await
}

/// Disables (ending their sessions, streams and tokens at once) or enables an account.
#[server(endpoint = "users/disable")]
pub async fn set_account_disabled(username: String, disabled: bool) -> Result<Account, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::set_disabled(username, disabled)).await
}

/// Gives an account another role.
#[server(endpoint = "users/role")]
pub async fn set_account_role(username: String, role: Role) -> Result<Account, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::set_role(username, role)).await
}

/// Gives an account a one-time password (ending its sessions).
#[server(endpoint = "users/reset_password")]
pub async fn reset_account_password(username: String) -> Result<OneTimePassword, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::reset_password(username)).await
}

/// Changes the signed-in user's own password.
#[server(endpoint = "account/password")]
pub async fn change_own_password(current: String, new: String) -> Result<(), AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::change_own_password(current, new)).await
}

/// The signed-in user's own account (for the address they are told things at).
#[server(endpoint = "account")]
pub async fn own_account() -> Result<Account, AppError> {
    use crate::api::ssr::{db, require_user, respond};
    respond(async {
        let user = require_user().await?;
        Ok(caseload::users::accounts::find_account(&db()?, &user.username).await?)
    })
    .await
}

/// Sets (or, empty, removes) the address the signed-in user is told of their people's news.
#[server(endpoint = "account/email")]
pub async fn set_own_email(email: String) -> Result<Account, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::set_own_email(email)).await
}

/// Chooses which of the signed-in user's tasks' ends they are emailed about.
#[server(endpoint = "account/task-emails")]
pub async fn set_own_task_emails(choice: TaskEmails) -> Result<Account, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::set_own_task_emails(choice)).await
}

/// Turns on or off the signed-in admin's email of every task that fails.
#[server(endpoint = "account/failure-alerts")]
pub async fn set_own_failure_alerts(on: bool) -> Result<Account, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::set_own_failure_alerts(on)).await
}

/// The signed-in user's API tokens, newest first.
#[server(endpoint = "account/tokens")]
pub async fn list_own_tokens() -> Result<Vec<TokenInfo>, AppError> {
    use crate::api::ssr::{db, require_user, respond};
    respond(async {
        let user = require_user().await?;
        Ok(caseload::users::tokens::list_tokens(&db()?, user.id).await?)
    })
    .await
}

/// Creates an API token for the signed-in user; `expires_in_days` 0 means never.
#[server(endpoint = "account/tokens/create")]
pub async fn create_own_token(
    name: String,
    can_act: bool,
    expires_in_days: u32,
) -> Result<NewTokenSecret, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::create_token(name, can_act, expires_in_days)).await
}

/// Revokes one of the signed-in user's tokens.
#[server(endpoint = "account/tokens/revoke")]
pub async fn revoke_own_token(id: Uuid) -> Result<(), AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::revoke_token(id)).await
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use caseload::users::{accounts, tokens};
    use queue::{WriteClass, WriteTransaction};

    use super::*;
    use crate::api::session_store::DatabaseSessionStore;
    use crate::api::ssr::{
        SESSION_MUST_CHANGE_PASSWORD, actor, current_user, internal, request_client, require_admin,
        require_user, session, state,
    };

    /// A write transaction of a person's request.
    async fn begin() -> Result<WriteTransaction, AppError> {
        state()?
            .store
            .begin_write_as(WriteClass::Interactive)
            .await
            .map_err(internal)
    }

    async fn commit(txn: WriteTransaction) -> Result<(), AppError> {
        txn.commit().await.map_err(internal)
    }

    pub async fn create(
        username: String,
        display_name: String,
        role: Role,
    ) -> Result<OneTimePassword, AppError> {
        let admin = require_admin().await?;
        let txn = begin().await?;
        let by = actor(&admin, request_client());
        let (account, password) =
            accounts::create_account(&*txn, &by, &username, &display_name, role).await?;
        commit(txn).await?;
        tracing::info!(admin = %admin.username, user = %account.username, role = role.as_str(), "created an account");
        Ok(OneTimePassword {
            username: account.username,
            password,
        })
    }

    pub async fn set_disabled(username: String, disabled: bool) -> Result<Account, AppError> {
        let admin = require_admin().await?;
        let txn = begin().await?;
        let by = actor(&admin, request_client());
        let account = accounts::set_disabled(&*txn, &by, &username, disabled).await?;
        if disabled {
            DatabaseSessionStore::delete_sessions_of(&*txn, account.id)
                .await
                .map_err(internal)?;
        }
        commit(txn).await?;
        tracing::info!(admin = %admin.username, user = %account.username, disabled, "changed an account");
        Ok(account)
    }

    pub async fn set_role(username: String, role: Role) -> Result<Account, AppError> {
        let admin = require_admin().await?;
        let txn = begin().await?;
        let by = actor(&admin, request_client());
        let account = accounts::set_role(&*txn, &by, &username, role).await?;
        commit(txn).await?;
        tracing::info!(admin = %admin.username, user = %account.username, role = role.as_str(), "changed a role");
        Ok(account)
    }

    pub async fn reset_password(username: String) -> Result<OneTimePassword, AppError> {
        let admin = require_admin().await?;
        let txn = begin().await?;
        let by = actor(&admin, request_client());
        let (account, password) = accounts::reset_password(&*txn, &by, &username).await?;
        DatabaseSessionStore::delete_sessions_of(&*txn, account.id)
            .await
            .map_err(internal)?;
        commit(txn).await?;
        tracing::info!(admin = %admin.username, user = %account.username, "reset a password");
        Ok(OneTimePassword {
            username: account.username,
            password,
        })
    }

    pub async fn set_own_email(email: String) -> Result<Account, AppError> {
        let user = require_user().await?;
        let txn = begin().await?;
        let by = actor(&user, request_client());
        let account = accounts::set_email(&*txn, &by, &user.username, Some(&email))
            .await
            .map_err(|error| match error {
                caseload::CaseloadError::Invalid(problem) => {
                    AppError::invalid_fields([("email".to_owned(), problem)])
                }
                other => other.into(),
            })?;
        commit(txn).await?;
        Ok(account)
    }

    pub async fn set_own_task_emails(choice: TaskEmails) -> Result<Account, AppError> {
        let user = require_user().await?;
        let txn = begin().await?;
        let account = accounts::set_task_emails(&*txn, &user.username, choice).await?;
        commit(txn).await?;
        Ok(account)
    }

    pub async fn set_own_failure_alerts(on: bool) -> Result<Account, AppError> {
        let user = require_user().await?;
        let txn = begin().await?;
        let account = accounts::set_failure_alerts(&*txn, &user.username, on).await?;
        commit(txn).await?;
        Ok(account)
    }

    pub async fn change_own_password(current: String, new: String) -> Result<(), AppError> {
        // Not `require_user`: this is what a user who must change their password may do.
        let user = current_user().await?.ok_or(AppError::Unauthenticated)?;
        let txn = begin().await?;
        let by = actor(&user, request_client());
        accounts::change_password(&*txn, &by, &user, &current, &new)
            .await
            .map_err(|error| match error {
                caseload::CaseloadError::Invalid(problem) => {
                    AppError::invalid_fields([("new".to_owned(), problem)])
                }
                other => other.into(),
            })?;
        commit(txn).await?;
        let session = session().await?;
        session
            .remove_value(SESSION_MUST_CHANGE_PASSWORD)
            .await
            .map_err(|e| internal(format!("writing the session failed: {e}")))?;
        tracing::info!(user = %user.username, "changed their password");
        Ok(())
    }

    pub async fn create_token(
        name: String,
        can_act: bool,
        expires_in_days: u32,
    ) -> Result<NewTokenSecret, AppError> {
        let user = require_user().await?;
        let txn = begin().await?;
        let by = actor(&user, request_client());
        let (token, secret) = tokens::create_token(
            &*txn,
            &by,
            user.id,
            tokens::NewToken {
                name,
                can_act,
                expires_in_days: (expires_in_days > 0).then_some(expires_in_days),
            },
        )
        .await?;
        commit(txn).await?;
        tracing::info!(user = %user.username, token = %token.id, can_act, "created an API token");
        Ok(NewTokenSecret { token, secret })
    }

    pub async fn revoke_token(id: Uuid) -> Result<(), AppError> {
        let user = require_user().await?;
        let txn = begin().await?;
        let by = actor(&user, request_client());
        if !tokens::revoke_token(&*txn, &by, user.id, id).await? {
            return Err(AppError::NotFound("Token".into()));
        }
        commit(txn).await?;
        tracing::info!(user = %user.username, token = %id, "revoked an API token");
        Ok(())
    }
}
