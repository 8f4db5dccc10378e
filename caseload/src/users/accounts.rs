//! What admins do to staff accounts (list, disable, enable, change a role, reset a
//! password) and what users do to their own (change their password).
//!
//! Every change runs on the caller's connection, which should be a write transaction: the
//! "at least one enabled admin" rule reads the admins with row locks (PostgreSQL) or under
//! the one writer (SQLite), so two admins demoting each other at once cannot both succeed.
//! Ending the sessions of a disabled or reset user is the web layer's part: it owns the
//! session table. Each change that changed something is recorded in the audit trail, in
//! the same transaction, as done by `by`.

pub use bulkq_types::accounts::{Account, TaskEmails};
use bulkq_types::audit::AuditAct;
use chrono::Utc;
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::password::{hash_password, verify_password};
use super::{NewStaffUser, Role, StaffUser, create_user, generate_password, password_policy};
use crate::CaseloadError;
use crate::audit::{self, Actor};
use crate::store;
use crate::store::entity::staff_user;

impl TryFrom<staff_user::Model> for Account {
    type Error = CaseloadError;

    fn try_from(row: staff_user::Model) -> Result<Self, Self::Error> {
        Ok(Account {
            id: row.id,
            role: row.role.parse()?,
            username: row.username,
            display_name: row.display_name,
            created_at: row.created_at,
            disabled_at: row.disabled_at,
            must_change_password: row.must_change_password,
            email: row.email,
            task_emails: TaskEmails::parse(&row.task_emails),
            failure_alerts: row.failure_alerts,
        })
    }
}

/// Creates an account with a generated one-time password, to be changed at its first
/// sign-in, and returns it with that password (the only time it is shown).
pub async fn create_account<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    username: &str,
    display_name: &str,
    role: Role,
) -> Result<(Account, String), CaseloadError> {
    let password = generate_password();
    let user = create_user(
        db,
        NewStaffUser {
            username: username.to_owned(),
            display_name: display_name.to_owned(),
            role,
            password: password.clone(),
        },
    )
    .await?;
    store::users::set(db, user.id, staff_user::Column::MustChangePassword, true).await?;
    let detail = format!("role: {}", role.as_str());
    audit::record(db, by, AuditAct::UserCreate, &[&user.username], detail).await?;
    Ok((find_account(db, &user.username).await?, password))
}

/// Every account, by username.
pub async fn list_accounts<C: ConnectionTrait>(db: &C) -> Result<Vec<Account>, CaseloadError> {
    store::users::by_username(db)
        .await?
        .into_iter()
        .map(Account::try_from)
        .collect()
}

/// The account with this username, disabled or not.
pub async fn find_account<C: ConnectionTrait>(
    db: &C,
    username: &str,
) -> Result<Account, CaseloadError> {
    store::users::find_by_username(db, username.trim())
        .await?
        .ok_or_else(|| CaseloadError::Invalid(format!("no user is called {:?}", username.trim())))?
        .try_into()
}

/// Disables (`true`) or enables an account; disabling the last enabled admin is refused.
/// Returns the account as it now is.
pub async fn set_disabled<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    username: &str,
    disabled: bool,
) -> Result<Account, CaseloadError> {
    let account = find_account(db, username).await?;
    if disabled && account.role == Role::Admin && account.disabled_at.is_none() {
        ensure_another_admin(db, account.id, "disabled").await?;
    }
    let disabled_at = match (disabled, account.disabled_at) {
        (true, Some(since)) => Some(since),
        (true, None) => Some(Utc::now()),
        (false, _) => None,
    };
    store::users::set(db, account.id, staff_user::Column::DisabledAt, disabled_at).await?;
    if disabled != account.disabled_at.is_some() {
        let act = if disabled {
            AuditAct::UserDisable
        } else {
            AuditAct::UserEnable
        };
        audit::record(db, by, act, &[&account.username], "").await?;
    }
    find_account(db, username).await
}

/// Gives an account a new role; demoting the last enabled admin is refused.
pub async fn set_role<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    username: &str,
    role: Role,
) -> Result<Account, CaseloadError> {
    let account = find_account(db, username).await?;
    if account.role == Role::Admin && role != Role::Admin && account.disabled_at.is_none() {
        ensure_another_admin(db, account.id, "made staff").await?;
    }
    store::users::set(db, account.id, staff_user::Column::Role, role.as_str()).await?;
    if role != account.role {
        let detail = format!("role: {}", role.as_str());
        audit::record(db, by, AuditAct::UserSetRole, &[&account.username], detail).await?;
    }
    find_account(db, username).await
}

/// Sets (or, with `None` or an empty text, removes) the address an account is told things
/// at; returns the account as it now is.
pub async fn set_email<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    username: &str,
    email: Option<&str>,
) -> Result<Account, CaseloadError> {
    let account = find_account(db, username).await?;
    let email = email.map(str::trim).filter(|email| !email.is_empty());
    if let Some(email) = email
        && (email.len() > MAX_EMAIL_LEN || email.parse::<lettre::Address>().is_err())
    {
        return Err(CaseloadError::Invalid(format!(
            "{email:?} is not an email address"
        )));
    }
    store::users::set(
        db,
        account.id,
        staff_user::Column::Email,
        email.map(str::to_owned),
    )
    .await?;
    if email != account.email.as_deref() {
        audit::record(db, by, AuditAct::UserSetEmail, &[&account.username], "").await?;
    }
    find_account(db, username).await
}

/// Chooses which of their tasks' ends `username` is emailed about.
pub async fn set_task_emails<C: ConnectionTrait>(
    db: &C,
    username: &str,
    choice: TaskEmails,
) -> Result<Account, CaseloadError> {
    let account = find_account(db, username).await?;
    store::users::set(
        db,
        account.id,
        staff_user::Column::TaskEmails,
        choice.as_str(),
    )
    .await?;
    find_account(db, username).await
}

/// Turns on or off an admin's email of every task that fails; staff cannot have it.
pub async fn set_failure_alerts<C: ConnectionTrait>(
    db: &C,
    username: &str,
    on: bool,
) -> Result<Account, CaseloadError> {
    let account = find_account(db, username).await?;
    if on && account.role != Role::Admin {
        return Err(CaseloadError::Invalid(
            "only administrators are alerted of others' failures".into(),
        ));
    }
    store::users::set(db, account.id, staff_user::Column::FailureAlerts, on).await?;
    find_account(db, username).await
}

/// The longest address accepted (RFC 5321).
const MAX_EMAIL_LEN: usize = 254;

/// Gives an account a generated one-time password that must be changed at the next sign-in,
/// and returns it (the only time it is shown).
pub async fn reset_password<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    username: &str,
) -> Result<(Account, String), CaseloadError> {
    let account = find_account(db, username).await?;
    let password = generate_password();
    let hash = hash_password(password.clone()).await?;
    store::users::set_password(db, account.id, hash, true).await?;
    audit::record(
        db,
        by,
        AuditAct::UserResetPassword,
        &[&account.username],
        "",
    )
    .await?;
    Ok((find_account(db, username).await?, password))
}

/// A user's own password change: the current password must be right and the new one must
/// pass the policy (and differ from the current one).
pub async fn change_password<C: ConnectionTrait>(
    db: &C,
    by: &Actor,
    user: &StaffUser,
    current: &str,
    new: &str,
) -> Result<(), CaseloadError> {
    let row = store::users::find(db, user.id)
        .await?
        .ok_or(CaseloadError::UnknownUser(user.id))?;
    if !verify_password(current.to_owned(), row.password_hash).await? {
        return Err(CaseloadError::Invalid(
            "the current password is not right".into(),
        ));
    }
    if current == new {
        return Err(CaseloadError::Invalid(
            "the new password must differ from the current one".into(),
        ));
    }
    password_policy::check(new, &user.username)?;
    let hash = hash_password(new.to_owned()).await?;
    store::users::set_password(db, user.id, hash, false).await?;
    audit::record(db, by, AuditAct::UserChangePassword, &[&user.username], "").await
}

/// Refuses a change that would leave no enabled admin but `admin_id`'s account.
async fn ensure_another_admin<C: ConnectionTrait>(
    db: &C,
    admin_id: Uuid,
    change: &str,
) -> Result<(), CaseloadError> {
    let enabled_admins = store::users::lock_enabled_admins(db).await?;
    if enabled_admins.iter().any(|id| *id != admin_id) {
        Ok(())
    } else {
        Err(CaseloadError::Invalid(format!(
            "the last enabled admin cannot be {change}; make another admin first"
        )))
    }
}
