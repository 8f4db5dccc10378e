//! The `staff_user` rows: accounts, their roles and passwords, and what they chose to be told.

use std::collections::HashSet;

use bulkq_types::accounts::{Role, TaskEmails};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use uuid::Uuid;

use super::entity::staff_user;
use crate::CaseloadError;

/// Adds an enabled account with no address, told of the default task ends, and returns it.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    username: String,
    display_name: String,
    role: Role,
    password_hash: String,
) -> Result<staff_user::Model, CaseloadError> {
    Ok(staff_user::ActiveModel {
        id: Set(Uuid::now_v7()),
        username: Set(username),
        display_name: Set(display_name),
        role: Set(role.as_str().to_owned()),
        password_hash: Set(password_hash),
        created_at: Set(chrono::Utc::now()),
        disabled_at: Set(None),
        must_change_password: Set(false),
        email: Set(None),
        task_emails: Set(TaskEmails::default().as_str().to_owned()),
        failure_alerts: Set(false),
        notices_seen_at: Set(None),
    }
    .insert(db)
    .await?)
}

/// The user with this id, disabled or not.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
) -> Result<Option<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find_by_id(id).one(db).await?)
}

/// The user with this id, unless they are disabled.
pub(crate) async fn find_enabled<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
) -> Result<Option<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find_by_id(id)
        .filter(staff_user::Column::DisabledAt.is_null())
        .one(db)
        .await?)
}

/// The user with this username, disabled or not.
pub(crate) async fn find_by_username<C: ConnectionTrait>(
    db: &C,
    username: &str,
) -> Result<Option<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .filter(staff_user::Column::Username.eq(username))
        .one(db)
        .await?)
}

/// The id of each user `usernames` names (unknown names are simply absent).
pub(crate) async fn ids_by_username<C: ConnectionTrait>(
    db: &C,
    usernames: HashSet<&str>,
) -> Result<Vec<(String, Uuid)>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .select_only()
        .column(staff_user::Column::Username)
        .column(staff_user::Column::Id)
        .filter(staff_user::Column::Username.is_in(usernames))
        .into_tuple()
        .all(db)
        .await?)
}

/// Every user, by username.
pub(crate) async fn by_username<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .order_by_asc(staff_user::Column::Username)
        .all(db)
        .await?)
}

/// How many users exist.
pub(crate) async fn count<C: ConnectionTrait>(db: &C) -> Result<u64, CaseloadError> {
    Ok(staff_user::Entity::find().count(db).await?)
}

/// Ids of every user with the given role.
pub(crate) async fn ids_with_role<C: ConnectionTrait>(
    db: &C,
    role: Role,
) -> Result<Vec<Uuid>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .select_only()
        .column(staff_user::Column::Id)
        .filter(staff_user::Column::Role.eq(role.as_str()))
        .into_tuple()
        .all(db)
        .await?)
}

/// Ids of the enabled admins, locked (PostgreSQL; SQLite has one writer) until the caller's
/// transaction ends.
pub(crate) async fn lock_enabled_admins<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<Uuid>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .select_only()
        .column(staff_user::Column::Id)
        .filter(staff_user::Column::Role.eq(Role::Admin.as_str()))
        .filter(staff_user::Column::DisabledAt.is_null())
        .lock_exclusive()
        .into_tuple()
        .all(db)
        .await?)
}

/// The enabled admins who asked to hear of every failure.
pub(crate) async fn alerted_admins<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find()
        .filter(staff_user::Column::FailureAlerts.eq(true))
        .filter(staff_user::Column::Role.eq(Role::Admin.as_str()))
        .filter(staff_user::Column::DisabledAt.is_null())
        .all(db)
        .await?)
}

/// Sets one column of one account.
pub(crate) async fn set<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
    column: staff_user::Column,
    value: impl Into<sea_orm::Value>,
) -> Result<(), CaseloadError> {
    staff_user::Entity::update_many()
        .col_expr(column, Expr::value(value))
        .filter(staff_user::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Moves an account's `notices_seen_at` forward to `at`, never back.
pub(crate) async fn raise_notices_seen<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(), CaseloadError> {
    staff_user::Entity::update_many()
        .col_expr(staff_user::Column::NoticesSeenAt, Expr::value(at))
        .filter(staff_user::Column::Id.eq(id))
        .filter(
            sea_orm::Condition::any()
                .add(staff_user::Column::NoticesSeenAt.is_null())
                .add(staff_user::Column::NoticesSeenAt.lt(at)),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Gives an account a new password hash, and says whether it must be changed at the next
/// sign-in.
pub(crate) async fn set_password<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
    hash: String,
    must_change: bool,
) -> Result<(), CaseloadError> {
    staff_user::Entity::update_many()
        .col_expr(staff_user::Column::PasswordHash, Expr::value(hash))
        .col_expr(
            staff_user::Column::MustChangePassword,
            Expr::value(must_change),
        )
        .filter(staff_user::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}
