//! Staff users: creation, roles and password checks; what admins do to accounts is in
//! [`accounts`], personal API tokens in [`tokens`].
//!
//! Passwords are hashed with argon2 (see `password`) and must pass [`password_policy`].

pub mod accounts;
mod password;
pub mod password_policy;
pub mod tokens;

use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use bulkq_types::text::{Lines, control_character_problem};

use crate::CaseloadError;
use crate::store;
use crate::store::entity::staff_user;
use password::{hash_password, unknown_user_hash, verify_password};

pub use bulkq_types::accounts::Role;

/// A staff user as the rest of the product sees them: never with the password hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffUser {
    pub id: Uuid,
    pub username: String,
    pub display_name: String,
    pub role: Role,
    /// A password reset was the last change: nothing but choosing a new one is allowed.
    pub must_change_password: bool,
}

impl StaffUser {
    /// Whether this user may see tasks owned by `owner_id`: their own, or anyone's as an
    /// admin. Everyone else's tasks do not exist for them (a 404, not a 403).
    pub fn may_see_tasks_of(&self, owner_id: Uuid) -> bool {
        self.role == Role::Admin || self.id == owner_id
    }
}

impl TryFrom<staff_user::Model> for StaffUser {
    type Error = CaseloadError;

    fn try_from(row: staff_user::Model) -> Result<Self, Self::Error> {
        Ok(StaffUser {
            id: row.id,
            role: row.role.parse()?,
            username: row.username,
            display_name: row.display_name,
            must_change_password: row.must_change_password,
        })
    }
}

/// What it takes to create a staff user.
#[derive(Debug, Clone)]
pub struct NewStaffUser {
    pub username: String,
    pub display_name: String,
    pub role: Role,
    pub password: String,
}

/// The longest username or display name.
pub const MAX_NAME_LEN: usize = 64;

/// Creates a staff user with an argon2-hashed password.
pub async fn create_user<C: ConnectionTrait>(
    db: &C,
    new: NewStaffUser,
) -> Result<StaffUser, CaseloadError> {
    let username = new.username.trim().to_owned();
    if username.is_empty() || username.chars().count() > MAX_NAME_LEN {
        return Err(CaseloadError::Invalid(format!(
            "a username must have 1 to {MAX_NAME_LEN} characters"
        )));
    }
    if let Some(problem) = control_character_problem(&username, Lines::One)
        .or_else(|| control_character_problem(&new.display_name, Lines::One))
    {
        return Err(CaseloadError::Invalid(format!("names: {problem}")));
    }
    if new.display_name.chars().count() > MAX_NAME_LEN {
        return Err(CaseloadError::Invalid(format!(
            "a display name must have at most {MAX_NAME_LEN} characters"
        )));
    }
    password_policy::check(&new.password, &username)?;
    if store::users::find_by_username(db, &username)
        .await?
        .is_some()
    {
        return Err(CaseloadError::UsernameTaken(username));
    }
    let password_hash = hash_password(new.password).await?;
    let display_name = match new.display_name.trim() {
        "" => username.clone(),
        name => name.to_owned(),
    };
    store::users::insert(db, username, display_name, new.role, password_hash)
        .await?
        .try_into()
}

/// The user with these credentials, or `None` when the username or password is wrong or the
/// account is disabled.
///
/// An unknown username still costs one hash verification, so response time does not reveal
/// which usernames exist (nor does a disabled account).
pub async fn authenticate<C: ConnectionTrait>(
    db: &C,
    username: &str,
    password: &str,
) -> Result<Option<StaffUser>, CaseloadError> {
    let row = store::users::find_by_username(db, username.trim()).await?;
    let stored_hash = match &row {
        Some(row) => row.password_hash.clone(),
        None => unknown_user_hash().to_owned(),
    };
    let matches = verify_password(password.to_owned(), stored_hash).await?;
    match row {
        Some(row) if matches && row.disabled_at.is_none() => Ok(Some(row.try_into()?)),
        _ => Ok(None),
    }
}

/// The user with this id, if they still exist and are not disabled: who a session, a token
/// or a stream may still act as.
pub async fn find_user<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
) -> Result<Option<StaffUser>, CaseloadError> {
    store::users::find_enabled(db, id)
        .await?
        .map(StaffUser::try_from)
        .transpose()
}

/// The id of the user with this username, if there is one: who a task list's owner filter
/// names.
pub async fn user_id_by_username<C: ConnectionTrait>(
    db: &C,
    username: &str,
) -> Result<Option<Uuid>, CaseloadError> {
    Ok(store::users::find_by_username(db, username)
        .await?
        .map(|row| row.id))
}

/// How many staff users exist (the demo set-up creates its users only into an empty table).
pub async fn count_users<C: ConnectionTrait>(db: &C) -> Result<u64, CaseloadError> {
    store::users::count(db).await
}

/// Ids of every staff user with the given role (the demo data assigns them as coaches).
pub async fn ids_with_role<C: ConnectionTrait>(
    db: &C,
    role: Role,
) -> Result<Vec<Uuid>, CaseloadError> {
    store::users::ids_with_role(db, role).await
}

/// A random 20-character alphanumeric password, for generated accounts and resets.
pub fn generate_password() -> String {
    use rand::Rng;
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(20)
        .map(char::from)
        .collect()
}
