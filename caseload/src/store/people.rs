//! The `person` rows as the bulk actions read and change them, by id: whose they are, and
//! the columns a change writes, with the rows locked while a batch changes them; and people
//! added in bulk (demo data, tests, the school's records).

use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, SimpleExpr};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::entity::person;
use crate::CaseloadError;
use crate::access::Actor;
use crate::users::Role;

/// A person as a change reads it: id, coach and program status.
pub(crate) type PersonNow = (Uuid, Option<Uuid>, String);

/// The people `actor` may act on, as a condition on `person` (everyone for admins): the
/// run_as rule of [`crate::access`] in SQL.
pub(crate) fn scope(actor: &Actor) -> Condition {
    match actor.role {
        Role::Admin => Condition::all(),
        Role::Staff => Condition::any()
            .add(person::Column::CoachId.eq(actor.id))
            .add(person::Column::CoachId.is_null()),
    }
}

/// How many people the caseload holds.
pub(crate) async fn count<C: ConnectionTrait>(db: &C) -> Result<u64, CaseloadError> {
    Ok(person::Entity::find().count(db).await?)
}

/// Adds `rows` in one multi-row INSERT.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    rows: Vec<person::ActiveModel>,
) -> Result<(), CaseloadError> {
    person::Entity::insert_many(rows).exec(db).await?;
    Ok(())
}

/// The people `ids` names, in no particular order (unknown ids are simply absent).
pub(crate) async fn with_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    Ok(person::Entity::find()
        .filter(person::Column::Id.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .all(db)
        .await?)
}

/// The people `ids` names, by id (unknown ids are simply absent).
pub(crate) async fn with_ids_by_id<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    Ok(person::Entity::find()
        .filter(person::Column::Id.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .order_by_asc(person::Column::Id)
        .all(db)
        .await?)
}

/// The coach of each person `ids` names (unknown ids are simply absent).
pub(crate) async fn coaches<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<(Uuid, Option<Uuid>)>, CaseloadError> {
    Ok(person::Entity::find()
        .select_only()
        .column(person::Column::Id)
        .column(person::Column::CoachId)
        .filter(person::Column::Id.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .into_tuple()
        .all(db)
        .await?)
}

/// The people `ids` names, locked on PostgreSQL so the "from" a history row records is the
/// value replaced (SQLite has one writer and ignores the clause), in id order so two tasks
/// changing the same people wait for each other instead of deadlocking.
pub(crate) async fn lock<C: ConnectionTrait>(
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

/// [`lock`] for people a saved query's walk has just `read` in this write transaction (a
/// batch's): SQLite's batch holds the one write lock from its `BEGIN IMMEDIATE`, so what it
/// read is current and is taken as it is, where reading it again cost a status change of a
/// million people about 4 s; PostgreSQL reads the people again, locked.
pub(crate) async fn lock_read<C: ConnectionTrait>(
    db: &C,
    read: Vec<PersonNow>,
) -> Result<Vec<PersonNow>, CaseloadError> {
    match db.get_database_backend() {
        DbBackend::Sqlite => Ok(read),
        _ => {
            let ids: Vec<Uuid> = read.iter().map(|(id, _, _)| *id).collect();
            lock(db, &ids).await
        }
    }
}

/// Moves the people `ids` to program status `status`, as changed by `actor` at `now`.
pub(crate) async fn set_program_status<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
    status: &str,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let value = (person::Column::ProgramStatus, Expr::value(status));
    set_for(db, ids, value, actor, now).await
}

/// Moves the people `ids` to coach `coach`, as changed by `actor` at `now`.
pub(crate) async fn set_coach<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
    coach: Uuid,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    set_for(
        db,
        ids,
        (person::Column::CoachId, Expr::value(coach)),
        actor,
        now,
    )
    .await
}

/// Sets `column` to `value` for the people `ids`, as changed by `actor` at `now`.
async fn set_for<C: ConnectionTrait>(
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
