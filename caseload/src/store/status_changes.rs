//! The `program_status_change` rows: each status change a task (or a sync) made.

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::entity::program_status_change as history;
use super::once_per_task::insert_new;
use crate::CaseloadError;
use crate::access::Actor;
use crate::status_change::StatusChange;

/// Inserts one history row per `(person, from_status)` unless this task already recorded that
/// person; returns the people newly recorded.
pub(crate) async fn record_once<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    change: &StatusChange,
    people: &[(Uuid, &str)],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let reason = change.reason.trim();
    let rows = people.iter().map(|(person_id, from_status)| {
        vec![
            Uuid::now_v7().into(),
            (*person_id).into(),
            (*from_status).into(),
            change.to_status.as_str().into(),
            reason.into(),
            actor.id.into(),
            now.into(),
            task_id.into(),
        ]
    });
    insert_new::<_, history::Entity>(
        db,
        &[
            history::Column::Id,
            history::Column::PersonId,
            history::Column::FromStatus,
            history::Column::ToStatus,
            history::Column::Reason,
            history::Column::ChangedBy,
            history::Column::ChangedAt,
            history::Column::TaskId,
        ],
        (history::Column::TaskId, history::Column::PersonId),
        rows,
    )
    .await
}
