//! The `coach_change` rows: each move of a person to another coach a task made.

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::entity::coach_change as history;
use super::once_per_task::insert_new;
use crate::CaseloadError;
use crate::access::Actor;

/// Inserts one history row per `(person, from_coach)` unless this task already recorded that
/// person; returns the people newly recorded.
pub(crate) async fn record_once<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    to_coach: Uuid,
    people: &[(Uuid, Option<Uuid>)],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let rows = people.iter().map(|(person_id, from_coach)| {
        vec![
            Uuid::now_v7().into(),
            (*person_id).into(),
            (*from_coach).into(),
            to_coach.into(),
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
            history::Column::FromCoachId,
            history::Column::ToCoachId,
            history::Column::ChangedBy,
            history::Column::ChangedAt,
            history::Column::TaskId,
        ],
        (history::Column::TaskId, history::Column::PersonId),
        rows,
    )
    .await
}
