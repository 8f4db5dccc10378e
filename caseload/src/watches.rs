//! Watch and unwatch: a staff user's personal bookmarks on people, set and cleared in bulk.
//!
//! Both are idempotent: watching someone already watched, or unwatching someone not watched,
//! is counted as unchanged, never an error, so a batch may run any number of times.

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::{Actor, BatchReport, Targets, sort_target_ids};
use crate::store;

/// Makes `actor` watch the people `person_ids` names (those within the actor's scope).
pub async fn watch<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    let targets = sort_target_ids(db, actor, person_ids).await?;
    watch_targets(db, actor, &targets, now).await
}

/// Makes `actor` watch `targets.allowed`, people already sorted by [`sort_target_ids`] or
/// read within the actor's scope.
pub async fn watch_targets<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    targets: &Targets,
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    if targets.allowed.is_empty() {
        return Ok(BatchReport::for_targets(targets, Vec::new()));
    }
    let inserted = store::watches::insert(db, actor.id, &targets.allowed, now).await?;
    Ok(BatchReport::for_targets(targets, inserted))
}

/// Makes `actor` stop watching the people `person_ids` names.
///
/// Removing one's own bookmark affects no one else, so unlike the other actions it is not
/// limited to the actor's scope: staff can always clear a watch left from an earlier
/// assignment.
pub async fn unwatch<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    person_ids: &[Uuid],
) -> Result<BatchReport, CaseloadError> {
    let mut targets = sort_target_ids(db, actor, person_ids).await?;
    targets.allowed.append(&mut targets.forbidden);
    unwatch_targets(db, actor, &targets).await
}

/// Makes `actor` stop watching `targets.allowed`, people known to exist.
pub async fn unwatch_targets<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    targets: &Targets,
) -> Result<BatchReport, CaseloadError> {
    let deleted = store::watches::delete(db, actor.id, &targets.allowed).await?;
    Ok(BatchReport::for_targets(targets, deleted))
}
