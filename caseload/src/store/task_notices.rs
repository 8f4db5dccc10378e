//! The `task_notice` rows: which ends of which tasks each person has been told of.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use super::entity::task_notice as notice;
use super::sends;
use crate::CaseloadError;
use crate::email::SendStatus;

/// Claims the end for `recipient` (`sending`); `false` if it was claimed before.
pub(crate) async fn claim<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    ended_at: DateTime<Utc>,
    recipient: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, CaseloadError> {
    let row = notice::ActiveModel {
        task_id: Set(task_id),
        ended_at: Set(ended_at),
        recipient_id: Set(recipient),
        status: Set(SendStatus::Sending.as_str().into()),
        detail: Set(None),
        updated_at: Set(now),
    };
    let inserted = notice::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                notice::Column::TaskId,
                notice::Column::EndedAt,
                notice::Column::RecipientId,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(inserted > 0)
}

/// Marks `failed` (interrupted) the notices still `sending` since before `before`.
pub(crate) async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    before: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let scope = sea_orm::Condition::all().add(notice::Column::UpdatedAt.lt(before));
    sends::fail_interrupted::<notice::Entity, _>(db, scope, now).await?;
    Ok(())
}

/// Records what became of one message (`status`, and why if it was not sent). A deferral is
/// not tried again: the news would be stale by then, and the dashboard shows it anyway.
pub(crate) async fn record<C: ConnectionTrait>(
    db: &C,
    (task_id, ended_at, recipient): (Uuid, DateTime<Utc>, Uuid),
    (status, detail): (SendStatus, Option<&str>),
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    notice::Entity::update_many()
        .col_expr(notice::Column::Status, Expr::value(status.as_str()))
        .col_expr(notice::Column::Detail, Expr::value(detail))
        .col_expr(notice::Column::UpdatedAt, Expr::value(now))
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::EndedAt.eq(ended_at))
        .filter(notice::Column::RecipientId.eq(recipient))
        .exec(db)
        .await?;
    Ok(())
}
