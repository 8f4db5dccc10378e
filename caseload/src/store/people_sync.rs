//! The statements that keep people in step with the school's records: people read by school
//! id, created and changed from records, retired, and their status moves recorded.

use std::collections::HashMap;

use bulkq_types::person_records::RETIRED_STATUS;
use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, FromQueryResult, PaginatorTrait,
    QueryFilter, QuerySelect,
};
use uuid::Uuid;

use super::entity::{person, program_status_change as history};
use crate::CaseloadError;

/// Rows per multi-row INSERT (SQLite allows 32,766 parameters; a person has 9 columns).
const INSERT_CHUNK: usize = 500;

/// What a record is compared with: a person's fields that records hold (not when or by whom
/// they last changed, which would only cost every read a timestamp to decode).
#[derive(Debug, FromQueryResult)]
pub(crate) struct StoredPerson {
    pub id: Uuid,
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub program_status: String,
    pub coach_id: Option<Uuid>,
}

/// The people with these school ids, by school id.
pub(crate) async fn by_school_id<C: ConnectionTrait>(
    db: &C,
    school_ids: impl IntoIterator<Item = String>,
) -> Result<HashMap<String, StoredPerson>, CaseloadError> {
    use person::Column;
    let school_ids: Vec<String> = school_ids.into_iter().collect();
    let mut found = HashMap::with_capacity(school_ids.len());
    for chunk in school_ids.chunks(INSERT_CHUNK * 10) {
        let rows = person::Entity::find()
            .select_only()
            .columns([
                Column::Id,
                Column::SchoolId,
                Column::FirstName,
                Column::LastName,
                Column::Email,
                Column::ProgramStatus,
                Column::CoachId,
            ])
            .filter(Column::SchoolId.in_text_list(db.get_database_backend(), chunk.iter().cloned()))
            .into_model::<StoredPerson>()
            .all(db)
            .await?;
        found.extend(rows.into_iter().map(|row| (row.school_id.clone(), row)));
    }
    Ok(found)
}

/// How many people are not retired: what a full sync would retire if its file named none.
pub(crate) async fn unretired_count<C: ConnectionTrait>(db: &C) -> Result<u64, CaseloadError> {
    Ok(person::Entity::find()
        .filter(person::Column::ProgramStatus.ne(RETIRED_STATUS))
        .count(db)
        .await?)
}

/// Adds the new people `rows`, in statements of [`INSERT_CHUNK`] rows.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    rows: &[person::ActiveModel],
) -> Result<(), CaseloadError> {
    for chunk in rows.chunks(INSERT_CHUNK) {
        super::people::insert(db, chunk.to_vec()).await?;
    }
    Ok(())
}

/// Sets the columns `change` sets for the person `id`.
pub(crate) async fn update<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
    change: person::ActiveModel,
) -> Result<(), CaseloadError> {
    person::Entity::update_many()
        .set(change)
        .filter(person::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Moves the people `ids` to `RETIRED`, as changed by `actor_id` at `now`.
pub(crate) async fn retire<C: ConnectionTrait>(
    db: &C,
    ids: impl IntoIterator<Item = Uuid>,
    actor_id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    person::Entity::update_many()
        .set(person::ActiveModel {
            program_status: Set(RETIRED_STATUS.to_owned()),
            updated_by: Set(Some(actor_id)),
            updated_at: Set(now),
            ..Default::default()
        })
        .filter(person::Column::Id.is_in(ids))
        .exec(db)
        .await?;
    Ok(())
}

/// One history row per `(person, from, to)` status move.
pub(crate) async fn record_moves<C: ConnectionTrait>(
    db: &C,
    actor_id: Uuid,
    moved: &[(Uuid, String, String)],
    reason: &str,
    task_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let rows: Vec<history::ActiveModel> = moved
        .iter()
        .map(|(person_id, from, to)| history::ActiveModel {
            id: Set(Uuid::now_v7()),
            person_id: Set(*person_id),
            from_status: Set(from.clone()),
            to_status: Set(to.clone()),
            reason: Set(reason.to_owned()),
            changed_by: Set(actor_id),
            changed_at: Set(now),
            task_id: Set(task_id),
        })
        .collect();
    for chunk in rows.chunks(INSERT_CHUNK) {
        history::Entity::insert_many(chunk.to_vec())
            .exec(db)
            .await?;
    }
    Ok(())
}
