//! Program statuses (the reference data is created by the migrations).

use sea_orm::{ConnectionTrait, EntityTrait, QueryOrder};

use crate::CaseloadError;
use crate::store::entity::program_status;

/// Every program status, in pick-list order.
pub async fn list_program_statuses<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<program_status::Model>, CaseloadError> {
    Ok(program_status::Entity::find()
        .order_by_asc(program_status::Column::SortOrder)
        .all(db)
        .await?)
}

/// Fails with [`CaseloadError::UnknownStatus`] unless `code` is a program status.
pub async fn require_status<C: ConnectionTrait>(db: &C, code: &str) -> Result<(), CaseloadError> {
    match program_status::Entity::find_by_id(code).one(db).await? {
        Some(_) => Ok(()),
        None => Err(CaseloadError::UnknownStatus(code.to_owned())),
    }
}
