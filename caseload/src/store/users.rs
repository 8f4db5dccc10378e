//! The `staff_user` rows: accounts, their roles and passwords, and what they chose to be told.

use bulkq_types::accounts::Role;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::entity::staff_user;
use crate::CaseloadError;

/// The user with this id, disabled or not.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
) -> Result<Option<staff_user::Model>, CaseloadError> {
    Ok(staff_user::Entity::find_by_id(id).one(db).await?)
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
