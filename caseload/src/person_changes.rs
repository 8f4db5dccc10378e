//! The two steps every bulk change of people's own columns shares (a status change, a coach
//! reassignment): read the batch's people under lock, then write the new value for those
//! whose change was recorded.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, SimpleExpr};
use sea_orm::{ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::{Actor, Targets, sort_targets};
use crate::store::entity::person;

/// A person as a change reads it: id, coach and program status.
pub(crate) type PersonNow = (Uuid, Option<Uuid>, String);

/// The people `ids` names, locked on PostgreSQL so the "from" a history row records is the
/// value replaced (SQLite has one writer and ignores the clause), in id order so two tasks
/// changing the same people wait for each other instead of deadlocking.
pub(crate) async fn lock_people<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<PersonNow>, CaseloadError> {
    Ok(person::Entity::find()
        .select_only()
        .column(person::Column::Id)
        .column(person::Column::CoachId)
        .column(person::Column::ProgramStatus)
        .filter(person::Column::Id.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .order_by_asc(person::Column::Id)
        .lock_exclusive()
        .into_tuple()
        .all(db)
        .await?)
}

/// The people `ids` names, locked as [`lock_people`] does, sorted by what `actor` may do
/// to them, with each one's coach.
pub(crate) async fn lock_and_sort<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    ids: &[Uuid],
) -> Result<(Targets, HashMap<Uuid, Option<Uuid>>), CaseloadError> {
    let coaches: HashMap<Uuid, Option<Uuid>> = lock_people(db, ids)
        .await?
        .into_iter()
        .map(|(id, coach, _)| (id, coach))
        .collect();
    Ok((sort_targets(actor, ids, &coaches), coaches))
}

/// Sets `column` to `value` for the people `ids`, as changed by `actor` at `now`.
pub(crate) async fn set_for<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
    (column, value): (person::Column, SimpleExpr),
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    if ids.is_empty() {
        return Ok(());
    }
    person::Entity::update_many()
        .col_expr(column, value)
        .col_expr(person::Column::UpdatedBy, Expr::value(actor.id))
        .col_expr(person::Column::UpdatedAt, Expr::value(now))
        .filter(person::Column::Id.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(())
}
