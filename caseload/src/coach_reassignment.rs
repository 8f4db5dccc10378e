//! Coach reassignment: one batch of people moved to another coach, each move recorded in
//! `coach_change` with the task that made it.
//!
//! Idempotent per task as a status change is: the history row is inserted first with
//! `ON CONFLICT (task_id, person_id) DO NOTHING … RETURNING person_id`, and only the people
//! it returns are moved. A batch run again after a crash therefore finds its own rows and
//! moves nobody twice, even if someone has moved those people since.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::{
    Actor, BatchReport, Targets, check_batch_size, lock_and_sort, lock_read_and_sort,
};
use crate::store;
use crate::store::people::PersonNow;

/// The coach people are moved to, as a task stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCoach {
    pub id: Uuid,
    /// As people read it in the task's summary: "Move 40 people to Ben Okafor".
    pub display_name: String,
}

/// The enabled account `username` names, whom people may be moved to.
pub async fn find_new_coach<C: ConnectionTrait>(
    db: &C,
    username: &str,
) -> Result<NewCoach, CaseloadError> {
    match store::users::find_by_username(db, username.trim()).await? {
        Some(user) if user.disabled_at.is_none() => Ok(NewCoach {
            id: user.id,
            display_name: user.display_name,
        }),
        Some(_) => Err(CaseloadError::Invalid(format!(
            "{:?} is disabled; people cannot be moved to them",
            username.trim()
        ))),
        None => Err(CaseloadError::Invalid(format!(
            "no user is called {:?}",
            username.trim()
        ))),
    }
}

/// The display name of the coach with `id`, if there is one.
pub async fn coach_name<C: ConnectionTrait>(
    db: &C,
    id: Uuid,
) -> Result<Option<String>, CaseloadError> {
    Ok(store::users::find(db, id)
        .await?
        .map(|user| user.display_name))
}

/// Moves the people `person_ids` names to `to_coach`, acting as `actor` for task `task_id`.
///
/// Call it inside the batch transaction that also records the task's checkpoint. People
/// outside the actor's scope and unknown ids are reported, not touched; people already with
/// that coach are left alone and get no history row. A coach disabled since the task was
/// submitted fails the batch: nobody is moved to an account that cannot sign in.
pub async fn reassign<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    to_coach: Uuid,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    check_batch_size(person_ids)?;
    require_enabled(db, to_coach).await?;
    let (targets, coaches) = lock_and_sort(db, actor, person_ids).await?;
    move_sorted(db, task_id, actor, to_coach, targets, &coaches, now).await
}

/// [`reassign`] for the people a saved query's walk has just `read` in the batch's
/// transaction, each with their coach and status, all within the actor's scope: not read
/// again where what was read is current (see [`store::people::lock_read`]).
pub(crate) async fn reassign_read<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    to_coach: Uuid,
    read: Vec<PersonNow>,
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    require_enabled(db, to_coach).await?;
    let (targets, coaches) = lock_read_and_sort(db, actor, read).await?;
    move_sorted(db, task_id, actor, to_coach, targets, &coaches, now).await
}

/// Moves the allowed `targets` that `coaches` does not already give `to_coach`.
async fn move_sorted<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    to_coach: Uuid,
    targets: Targets,
    coaches: &HashMap<Uuid, Option<Uuid>>,
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    let to_move: Vec<(Uuid, Option<Uuid>)> = targets
        .allowed
        .iter()
        .map(|id| (*id, coaches[id]))
        .filter(|(_, from)| *from != Some(to_coach))
        .collect();
    let moved =
        store::coach_changes::record_once(db, task_id, actor, to_coach, &to_move, now).await?;
    store::people::set_coach(db, &moved, to_coach, actor, now).await?;
    Ok(BatchReport::for_targets(&targets, moved))
}

/// Fails unless `coach` is an enabled account.
async fn require_enabled<C: ConnectionTrait>(db: &C, coach: Uuid) -> Result<(), CaseloadError> {
    match store::users::find(db, coach).await? {
        Some(user) if user.disabled_at.is_none() => Ok(()),
        Some(user) => Err(CaseloadError::Invalid(format!(
            "{:?} was disabled; people cannot be moved to them",
            user.username
        ))),
        None => Err(CaseloadError::Invalid(
            "the new coach's account no longer exists".into(),
        )),
    }
}
