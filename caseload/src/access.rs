//! Who a bulk action may touch: the run_as rule.
//!
//! A task acts with the permissions of its `run_as` staff user:
//! - an **admin** may target anyone;
//! - a **staff** user may target the people they coach and the people nobody coaches yet
//!   (so staff can pick up unassigned people, but never act on a colleague's caseload).
//!
//! The rule is one SQL condition ([`Actor::scope`]), so it applies the same way to explicit
//! id lists (where people outside it are reported as forbidden and left alone) and to saved
//! queries (where they are simply not selected).

use std::collections::{HashMap, HashSet};

use bulkq_types::actions::ActionReport;
use bulkq_types::outcomes::PersonOutcome;
use sea_orm::{Condition, ConnectionTrait};
use uuid::Uuid;

use crate::CaseloadError;
use crate::MAX_BATCH;
use crate::store;
use crate::store::entity::person;
use crate::store::people::PersonNow;
use crate::users::Role;

/// The staff user an operation acts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    pub id: Uuid,
    pub role: Role,
}

impl Actor {
    /// Loads the `run_as` user; a task whose user has since been deleted or disabled may do
    /// nothing.
    pub async fn load<C: ConnectionTrait>(db: &C, user_id: Uuid) -> Result<Self, CaseloadError> {
        let user = store::users::find(db, user_id)
            .await?
            .ok_or(CaseloadError::UnknownUser(user_id))?;
        if user.disabled_at.is_some() {
            return Err(CaseloadError::UserDisabled(user.username));
        }
        Ok(Actor {
            id: user.id,
            role: user.role.parse()?,
        })
    }

    /// The people this actor may act on, as a condition on `person` (everyone for admins).
    pub fn scope(&self) -> Condition {
        store::people::scope(self)
    }

    /// Whether this actor may act on a person with this coach.
    pub fn may_target(&self, coach_id: Option<Uuid>) -> bool {
        match self.role {
            Role::Admin => true,
            Role::Staff => coach_id.is_none_or(|coach| coach == self.id),
        }
    }
}

/// A batch of requested ids sorted by what the actor may do with them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// Existing people the actor may act on, in the order requested.
    pub allowed: Vec<Uuid>,
    /// Existing people outside the actor's scope.
    pub forbidden: Vec<Uuid>,
    /// Ids that name nobody (never existed, or deleted since the task was submitted).
    pub unknown: Vec<Uuid>,
}

impl Targets {
    /// People already known to exist and to be within reach (a saved query's batch).
    pub fn all_allowed(ids: Vec<Uuid>) -> Self {
        Targets {
            allowed: ids,
            ..Targets::default()
        }
    }
}

/// Sorts `ids` into allowed, forbidden and unknown for `actor` with one query (a repeated id
/// counts once), and returns the allowed people's rows in the order requested.
pub async fn load_targets<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    ids: &[Uuid],
) -> Result<(Targets, Vec<person::Model>), CaseloadError> {
    check_batch_size(ids)?;
    let mut found: HashMap<Uuid, person::Model> = store::people::with_ids(db, ids)
        .await?
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
    let coaches = found.iter().map(|(id, row)| (*id, row.coach_id)).collect();
    let targets = sort_targets(actor, ids, &coaches);
    let allowed = targets
        .allowed
        .iter()
        .filter_map(|id| found.remove(id))
        .collect();
    Ok((targets, allowed))
}

/// Sorts `ids` into allowed, forbidden and unknown for `actor`, reading only each person's
/// coach: for actions that need no more of a person than their id.
pub async fn sort_target_ids<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    ids: &[Uuid],
) -> Result<Targets, CaseloadError> {
    check_batch_size(ids)?;
    Ok(read_and_sort(db, actor, ids).await?.0)
}

/// The people `ids` names, read but not locked (for an action that changes none of their
/// columns: on PostgreSQL a lock writes every row it takes), sorted by what `actor` may do
/// to them, with each one's coach.
pub(crate) async fn read_and_sort<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    ids: &[Uuid],
) -> Result<(Targets, HashMap<Uuid, Option<Uuid>>), CaseloadError> {
    let coaches: HashMap<Uuid, Option<Uuid>> =
        store::people::coaches(db, ids).await?.into_iter().collect();
    Ok((sort_targets(actor, ids, &coaches), coaches))
}

/// The people `ids` names, locked as [`store::people::lock`] does (for a change of their
/// own columns: a status change, a coach reassignment), sorted by what `actor` may do to
/// them, with each one's coach.
pub(crate) async fn lock_and_sort<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    ids: &[Uuid],
) -> Result<(Targets, HashMap<Uuid, Option<Uuid>>), CaseloadError> {
    let locked = store::people::lock(db, ids).await?;
    Ok(sort_with_coaches(actor, ids, locked))
}

/// [`lock_and_sort`] for the people a saved query's walk has just `read` in the batch's
/// transaction (see [`store::people::lock_read`]).
pub(crate) async fn lock_read_and_sort<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    read: Vec<PersonNow>,
) -> Result<(Targets, HashMap<Uuid, Option<Uuid>>), CaseloadError> {
    let ids: Vec<Uuid> = read.iter().map(|(id, _, _)| *id).collect();
    check_batch_size(&ids)?;
    let locked = store::people::lock_read(db, read).await?;
    Ok(sort_with_coaches(actor, &ids, locked))
}

/// `ids` sorted by what `actor` may do to them, given the people found, with each one's
/// coach.
fn sort_with_coaches(
    actor: &Actor,
    ids: &[Uuid],
    found: Vec<PersonNow>,
) -> (Targets, HashMap<Uuid, Option<Uuid>>) {
    let coaches: HashMap<Uuid, Option<Uuid>> = found
        .into_iter()
        .map(|(id, coach, _)| (id, coach))
        .collect();
    (sort_targets(actor, ids, &coaches), coaches)
}

/// Sorts `ids` given the coach of each existing person among them.
pub fn sort_targets(actor: &Actor, ids: &[Uuid], coaches: &HashMap<Uuid, Option<Uuid>>) -> Targets {
    let mut targets = Targets::default();
    let mut seen = HashSet::with_capacity(ids.len());
    for id in ids.iter().filter(|id| seen.insert(**id)) {
        match coaches.get(id) {
            None => targets.unknown.push(*id),
            Some(coach) if actor.may_target(*coach) => targets.allowed.push(*id),
            Some(_) => targets.forbidden.push(*id),
        }
    }
    targets
}

/// Rejects a batch larger than [`MAX_BATCH`].
pub fn check_batch_size(ids: &[Uuid]) -> Result<(), CaseloadError> {
    if ids.len() > MAX_BATCH {
        return Err(CaseloadError::Invalid(format!(
            "a batch may name at most {MAX_BATCH} people"
        )));
    }
    Ok(())
}

/// What one batch of a bulk action did, person by person.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// People the batch changed (or, for email, whose message it handled).
    pub changed: Vec<Uuid>,
    /// Allowed people left as they were: already in the wanted state, or done by an earlier
    /// run of the same batch.
    pub unchanged: Vec<Uuid>,
    pub forbidden: Vec<Uuid>,
    pub unknown: Vec<Uuid>,
}

impl BatchReport {
    /// A report of `targets` where the allowed people in `changed` were changed and the
    /// other allowed people were not.
    pub fn for_targets(targets: &Targets, changed: Vec<Uuid>) -> Self {
        let changed_set: HashSet<Uuid> = changed.iter().copied().collect();
        BatchReport {
            unchanged: targets
                .allowed
                .iter()
                .filter(|id| !changed_set.contains(id))
                .copied()
                .collect(),
            changed,
            forbidden: targets.forbidden.clone(),
            unknown: targets.unknown.clone(),
        }
    }

    /// Adds what this batch did to a bulk action's running tally.
    pub fn add_to(&self, report: &mut ActionReport) {
        report.changed += self.changed.len() as u64;
        report.unchanged += self.unchanged.len() as u64;
        report.add_skipped(&self.forbidden, &self.unknown);
    }

    /// Each person's outcome, outcome by outcome.
    pub fn outcomes(&self) -> [(PersonOutcome, &[Uuid]); 4] {
        [
            (PersonOutcome::Changed, &self.changed),
            (PersonOutcome::Unchanged, &self.unchanged),
            (PersonOutcome::OutOfScope, &self.forbidden),
            (PersonOutcome::Unknown, &self.unknown),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staff_may_target_their_own_and_unassigned_people_admins_anyone() {
        let me = Uuid::now_v7();
        let colleague = Uuid::now_v7();
        let staff = Actor {
            id: me,
            role: Role::Staff,
        };
        let admin = Actor {
            id: me,
            role: Role::Admin,
        };
        assert!(staff.may_target(Some(me)));
        assert!(staff.may_target(None));
        assert!(!staff.may_target(Some(colleague)));
        assert!(admin.may_target(Some(colleague)));
    }
}
