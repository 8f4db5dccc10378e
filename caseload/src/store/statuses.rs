//! The `program_status` rows (the reference data is created by the migrations).

use sea_orm::{ConnectionTrait, EntityTrait, QueryOrder, QuerySelect};

use super::entity::program_status;
use crate::CaseloadError;

/// Every program status, in pick-list order.
pub(crate) async fn in_pick_list_order<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<program_status::Model>, CaseloadError> {
    Ok(program_status::Entity::find()
        .order_by_asc(program_status::Column::SortOrder)
        .all(db)
        .await?)
}

/// The program status `code`, if there is one.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    code: &str,
) -> Result<Option<program_status::Model>, CaseloadError> {
    Ok(program_status::Entity::find_by_id(code).one(db).await?)
}

/// The code of every program status.
pub(crate) async fn codes<C: ConnectionTrait>(db: &C) -> Result<Vec<String>, CaseloadError> {
    Ok(program_status::Entity::find()
        .select_only()
        .column(program_status::Column::Code)
        .into_tuple()
        .all(db)
        .await?)
}
