//! Program status change: one batch of people moved to a new status, each change recorded
//! in `program_status_change` with the task that made it.
//!
//! Idempotent per task: the history row is inserted first with `ON CONFLICT (task_id,
//! person_id) DO NOTHING … RETURNING person_id`, and only the people it returns are updated.
//! A batch run again after a crash (or twice by mistake) therefore finds its own history rows
//! and changes nothing, even if someone has changed those people since.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::{Actor, BatchReport, check_batch_size, sort_targets};
use crate::statuses::require_status;
use crate::store;
use crate::store::people::PersonNow;
use bulkq_types::filter::MAX_STATUS_CODE_LEN;
use bulkq_types::text::{Lines, control_character_problem};

/// The longest reason accepted.
pub const MAX_REASON_LEN: usize = 1_000;

/// The change a task applies to every person it targets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatusChange {
    /// A `program_status.code`.
    pub to_status: String,
    /// Why; recorded with every change.
    pub reason: String,
}

impl StatusChange {
    /// Checks the change before any person is touched: the status must exist and the reason
    /// must be given.
    pub async fn validate<C: ConnectionTrait>(&self, db: &C) -> Result<(), CaseloadError> {
        crate::error::first_problem(self.problems())?;
        require_status(db, &self.to_status).await
    }

    /// What is wrong with the change short of the database's say (does the status exist), by
    /// field.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let to_status = match self.to_status.chars().count() {
            0 => Some("choose a program status".to_owned()),
            n if n > MAX_STATUS_CODE_LEN => Some(format!(
                "a program status code has at most {MAX_STATUS_CODE_LEN} characters"
            )),
            _ => control_character_problem(&self.to_status, Lines::One),
        };
        let reason = self.reason.trim();
        let reason = if reason.is_empty() || reason.chars().count() > MAX_REASON_LEN {
            Some(format!(
                "a reason must have 1 to {MAX_REASON_LEN} characters"
            ))
        } else {
            control_character_problem(reason, Lines::Many)
        };
        [("to_status", to_status), ("reason", reason)]
            .into_iter()
            .filter_map(|(field, problem)| Some((field, problem?)))
            .collect()
    }
}

/// Applies `change` to the people `person_ids` names, acting as `actor` for task `task_id`.
///
/// Call it inside the batch transaction that also records the task's checkpoint. People
/// outside the actor's scope and unknown ids are reported, not touched; people already in
/// the new status are left alone and get no history row.
pub async fn change_status<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    change: &StatusChange,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    check_batch_size(person_ids)?;
    change.validate(db).await?;
    let current = store::people::lock(db, person_ids).await?;
    apply(db, task_id, actor, change, person_ids, &current, now).await
}

/// [`change_status`] for the people a saved query's walk has just `read` in the batch's
/// transaction, each with their coach and status, all within the actor's scope: not read
/// again where what was read is current (see [`store::people::lock_read`]).
pub(crate) async fn change_status_of_read<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    change: &StatusChange,
    read: Vec<PersonNow>,
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    let person_ids: Vec<Uuid> = read.iter().map(|(id, _, _)| *id).collect();
    check_batch_size(&person_ids)?;
    change.validate(db).await?;
    let current = store::people::lock_read(db, read).await?;
    apply(db, task_id, actor, change, &person_ids, &current, now).await
}

/// Applies `change` to `person_ids` as `current` finds them (locked where that matters).
async fn apply<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    change: &StatusChange,
    person_ids: &[Uuid],
    current: &[PersonNow],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    let coaches: HashMap<Uuid, Option<Uuid>> =
        current.iter().map(|(id, coach, _)| (*id, *coach)).collect();
    let targets = sort_targets(actor, person_ids, &coaches);
    let from: HashMap<Uuid, &str> = current
        .iter()
        .filter(|(_, _, status)| *status != change.to_status)
        .map(|(id, _, status)| (*id, status.as_str()))
        .collect();
    let to_change: Vec<(Uuid, &str)> = targets
        .allowed
        .iter()
        .filter_map(|id| from.get(id).map(|status| (*id, *status)))
        .collect();
    let recorded =
        store::status_changes::record_once(db, task_id, actor, change, &to_change, now).await?;
    store::people::set_program_status(db, &recorded, &change.to_status, actor, now).await?;
    Ok(BatchReport::for_targets(&targets, recorded))
}
