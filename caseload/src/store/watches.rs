//! The `person_watch` rows: a staff user's personal bookmarks on people.

use chrono::{DateTime, Utc};
use queue::{IdListFilter, id_rows};
use sea_orm::sea_query::{Condition, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, QueryResult, Statement};
use uuid::Uuid;

use super::entity::person_watch;
use crate::CaseloadError;

/// The marks of a watch statement's first two parameters, the watcher and the time.
fn watcher_and_time(backend: DbBackend) -> (&'static str, &'static str) {
    match backend {
        DbBackend::Postgres => ("$1", "$2"),
        _ => ("?", "?"),
    }
}

/// Makes `staff_user_id` watch the people `person_ids` (known to exist) as of `now`; returns
/// those who were not watched before.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    staff_user_id: Uuid,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let backend = db.get_database_backend();
    let (ids, id_list) = id_rows(backend, 3, person_ids.iter().copied());
    let (actor_id, created_at) = watcher_and_time(backend);
    // One statement for every batch size (ADR 0014); `WHERE true` tells SQLite's parser
    // that `ON CONFLICT` is the upsert, not a join's `ON`.
    let insert = Statement::from_sql_and_values(
        backend,
        format!(
            "INSERT INTO person_watch (staff_user_id, person_id, created_at) \
             SELECT {actor_id}, ids.id, {created_at} FROM {ids} WHERE true \
             ON CONFLICT (staff_user_id, person_id) DO NOTHING RETURNING person_id"
        ),
        [staff_user_id.into(), now.into(), id_list],
    );
    people_of(&db.query_all_raw(insert).await?)
}

/// Makes `staff_user_id` watch every person as of `now`, in one statement (for benchmarks,
/// through `crate::testing`).
#[cfg(feature = "testing")]
pub(crate) async fn insert_everyone<C: ConnectionTrait>(
    db: &C,
    staff_user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let backend = db.get_database_backend();
    let (actor_id, created_at) = watcher_and_time(backend);
    let insert = Statement::from_sql_and_values(
        backend,
        format!(
            "INSERT INTO person_watch (staff_user_id, person_id, created_at) \
             SELECT {actor_id}, id, {created_at} FROM person"
        ),
        [staff_user_id.into(), now.into()],
    );
    db.execute_raw(insert).await?;
    Ok(())
}

/// Makes `staff_user_id` stop watching the people `person_ids`; returns those who were
/// watched.
pub(crate) async fn delete<C: ConnectionTrait>(
    db: &C,
    staff_user_id: Uuid,
    person_ids: &[Uuid],
) -> Result<Vec<Uuid>, CaseloadError> {
    let delete = Query::delete()
        .from_table(person_watch::Entity)
        .cond_where(
            Condition::all()
                .add(person_watch::Column::StaffUserId.eq(staff_user_id))
                .add(
                    person_watch::Column::PersonId
                        .in_id_list(db.get_database_backend(), person_ids.iter().copied()),
                ),
        )
        .returning_col(person_watch::Column::PersonId)
        .to_owned();
    people_of(&db.query_all(&delete).await?)
}

/// The `person_id`s a statement's `RETURNING` named.
fn people_of(rows: &[QueryResult]) -> Result<Vec<Uuid>, CaseloadError> {
    Ok(rows
        .iter()
        .map(|row| row.try_get_by_index::<Uuid>(0))
        .collect::<Result<_, _>>()?)
}
