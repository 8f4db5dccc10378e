//! The `staff_user` rows: accounts, their roles and passwords, and what they chose to be told.

use sea_orm::{ConnectionTrait, EntityTrait};
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
