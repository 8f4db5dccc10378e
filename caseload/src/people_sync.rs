//! People brought in from the school's own records and kept in step with them: records
//! upserted by `school_id`, and people retired (moved to `RETIRED`, their history kept;
//! nobody with history is ever deleted).
//!
//! A batch is [`resolve`]d first (each record checked alone, against the others and against
//! the database's statuses and coaches), then [`apply`]'d inside the caller's transaction:
//! one read of the people it names, an insert for the new ones, an update only for those
//! whose record differs, and a history row for each status that moved. Applying the same
//! records again writes nothing and counts every one unchanged.

use std::collections::{HashMap, HashSet};

use bulkq_types::person_records::{PersonRecord, RETIRED_STATUS, SyncOutcome};
use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ConnectionTrait};
use uuid::Uuid;

use crate::CaseloadError;
use crate::store;
use crate::store::entity::person;
use crate::store::people_sync::StoredPerson;

/// Why a status moved when a record brought it in step.
pub const SYNC_REASON: &str = "kept in step with the school's records";
/// Why a status moved to `RETIRED`.
pub const RETIRE_REASON: &str = "retired: no longer in the school's records";

/// A record that passed every check, trimmed, with its coach found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRecord {
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub program_status: String,
    pub coach_id: Option<Uuid>,
}

impl ResolvedRecord {
    /// Whether the stored person already is what the record says.
    fn matches(&self, row: &StoredPerson) -> bool {
        row.first_name == self.first_name
            && row.last_name == self.last_name
            && row.email == self.email
            && row.program_status == self.program_status
            && row.coach_id == self.coach_id
    }

    /// The fields a record sets on a person, as changed by `actor_id` at `now`.
    fn as_change(&self, actor_id: Uuid, now: DateTime<Utc>) -> person::ActiveModel {
        person::ActiveModel {
            first_name: Set(self.first_name.clone()),
            last_name: Set(self.last_name.clone()),
            email: Set(self.email.clone()),
            program_status: Set(self.program_status.clone()),
            coach_id: Set(self.coach_id),
            updated_by: Set(Some(actor_id)),
            updated_at: Set(now),
            ..Default::default()
        }
    }
}

/// What [`apply`] would do with each record, without writing anything, and how many of the
/// records name people who are not retired (what a full sync keeps).
pub async fn outcomes<C: ConnectionTrait>(
    db: &C,
    records: &[ResolvedRecord],
) -> Result<(Vec<SyncOutcome>, u64), CaseloadError> {
    let existing =
        store::people_sync::by_school_id(db, records.iter().map(|r| r.school_id.clone())).await?;
    let mut kept_unretired = 0;
    let outcomes = records
        .iter()
        .map(|record| match existing.get(&record.school_id) {
            None => SyncOutcome::Created,
            Some(row) => {
                if row.program_status != RETIRED_STATUS {
                    kept_unretired += 1;
                }
                if record.matches(row) {
                    SyncOutcome::Unchanged
                } else {
                    SyncOutcome::Changed
                }
            }
        })
        .collect();
    Ok((outcomes, kept_unretired))
}

/// A record's problems, by field.
pub type RecordProblems = Vec<(&'static str, String)>;

/// Checks every record: alone, against the earlier records of the batch (a school id
/// twice), and against the database (an unknown status or coach).
pub async fn resolve<C: ConnectionTrait>(
    db: &C,
    records: &[PersonRecord],
) -> Result<Vec<Result<ResolvedRecord, RecordProblems>>, CaseloadError> {
    let statuses: HashSet<String> = store::statuses::codes(db).await?.into_iter().collect();
    let usernames: HashSet<&str> = records
        .iter()
        .filter_map(|record| record.coach.as_deref().map(str::trim))
        .filter(|name| !name.is_empty())
        .collect();
    let coaches: HashMap<String, Uuid> = if usernames.is_empty() {
        HashMap::new()
    } else {
        store::users::ids_by_username(db, usernames)
            .await?
            .into_iter()
            .collect()
    };
    let mut first_seen: HashMap<String, usize> = HashMap::new();
    Ok(records
        .iter()
        .enumerate()
        .map(|(index, record)| {
            let mut problems = record.problems();
            let school_id = record.school_id.trim().to_owned();
            if let Some(first) = first_seen.get(&school_id) {
                problems.push((
                    "school_id",
                    format!(
                        "school id {school_id:?} already appears in record {}",
                        first + 1
                    ),
                ));
            } else {
                first_seen.insert(school_id.clone(), index);
            }
            let status = record.program_status.trim();
            if !problems.iter().any(|(field, _)| *field == "program_status")
                && !statuses.contains(status)
            {
                problems.push((
                    "program_status",
                    format!("unknown program status {status:?}"),
                ));
            }
            let coach = record
                .coach
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty());
            let coach_id = coach.and_then(|name| coaches.get(name).copied());
            if let Some(name) = coach
                && coach_id.is_none()
                && !problems.iter().any(|(field, _)| *field == "coach")
            {
                problems.push(("coach", format!("no staff user is called {name:?}")));
            }
            if !problems.is_empty() {
                return Err(problems);
            }
            let email = record
                .email
                .as_deref()
                .map(str::trim)
                .filter(|e| !e.is_empty());
            Ok(ResolvedRecord {
                school_id,
                first_name: record.first_name.trim().to_owned(),
                last_name: record.last_name.trim().to_owned(),
                email: email.map(str::to_owned),
                program_status: status.to_owned(),
                coach_id,
            })
        })
        .collect())
}

/// Brings the people of `records` in step, acting as `actor_id` (and for `task_id`, when a
/// task does it), and says what happened to each, in order.
pub async fn apply<C: ConnectionTrait>(
    db: &C,
    actor_id: Uuid,
    records: &[ResolvedRecord],
    task_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<Vec<SyncOutcome>, CaseloadError> {
    let existing =
        store::people_sync::by_school_id(db, records.iter().map(|r| r.school_id.clone())).await?;
    let mut outcomes = Vec::with_capacity(records.len());
    let mut new_rows = Vec::new();
    let mut moved = Vec::new();
    for record in records {
        let Some(row) = existing.get(&record.school_id) else {
            new_rows.push(person::ActiveModel {
                id: Set(Uuid::now_v7()),
                school_id: Set(record.school_id.clone()),
                ..record.as_change(actor_id, now)
            });
            outcomes.push(SyncOutcome::Created);
            continue;
        };
        if record.matches(row) {
            outcomes.push(SyncOutcome::Unchanged);
            continue;
        }
        if row.program_status != record.program_status {
            moved.push((
                row.id,
                row.program_status.clone(),
                record.program_status.clone(),
            ));
        }
        store::people_sync::update(db, row.id, record.as_change(actor_id, now)).await?;
        outcomes.push(SyncOutcome::Changed);
    }
    store::people_sync::insert(db, &new_rows).await?;
    store::people_sync::record_moves(db, actor_id, &moved, SYNC_REASON, task_id, now).await?;
    Ok(outcomes)
}

/// Moves the people with these school ids to `RETIRED`; for each, `None` when nobody has
/// that school id, `Unchanged` when they were retired already.
pub async fn retire<C: ConnectionTrait>(
    db: &C,
    actor_id: Uuid,
    school_ids: &[String],
    task_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<Vec<Option<SyncOutcome>>, CaseloadError> {
    let existing = store::people_sync::by_school_id(db, school_ids.iter().cloned()).await?;
    let mut moved = Vec::new();
    let outcomes = school_ids
        .iter()
        .map(|school_id| {
            let row = existing.get(school_id)?;
            if row.program_status == RETIRED_STATUS {
                return Some(SyncOutcome::Unchanged);
            }
            moved.push((
                row.id,
                row.program_status.clone(),
                RETIRED_STATUS.to_owned(),
            ));
            Some(SyncOutcome::Retired)
        })
        .collect();
    if !moved.is_empty() {
        let ids = moved.iter().map(|(id, ..)| *id);
        store::people_sync::retire(db, ids, actor_id, now).await?;
    }
    store::people_sync::record_moves(db, actor_id, &moved, RETIRE_REASON, task_id, now).await?;
    Ok(outcomes)
}

/// The person the school knows as `school_id`, if any: the key of a search by person.
pub async fn person_with_school_id<C: ConnectionTrait>(
    db: &C,
    school_id: &str,
) -> Result<Option<Uuid>, CaseloadError> {
    let found = store::people_sync::by_school_id(db, [school_id.to_owned()]).await?;
    Ok(found.into_values().next().map(|person| person.id))
}
