//! Program statuses (the reference data is created by the migrations).

use sea_orm::ConnectionTrait;

use crate::CaseloadError;
use crate::store;
use crate::store::entity::program_status;

/// Every program status, in pick-list order.
pub async fn list_program_statuses<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<program_status::Model>, CaseloadError> {
    store::statuses::in_pick_list_order(db).await
}

/// Fails with [`CaseloadError::UnknownStatus`] unless `code` is a program status.
pub async fn require_status<C: ConnectionTrait>(db: &C, code: &str) -> Result<(), CaseloadError> {
    match store::statuses::find(db, code).await? {
        Some(_) => Ok(()),
        None => Err(CaseloadError::UnknownStatus(code.to_owned())),
    }
}
