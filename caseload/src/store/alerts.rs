//! The `early_alert` rows: alerts raised once per task and person, closed by staff.

use bulkq_types::alerts::AlertContent;
use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, ExprTrait, Func};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use uuid::Uuid;

use super::entity::early_alert as alert;
use super::once_per_task::insert_new;
use crate::CaseloadError;
use crate::access::Actor;

/// Inserts `content`'s alert for each `(person, coach)` of `people` unless task `task_id`
/// already raised that person's; returns the people newly alerted.
pub(crate) async fn raise_once<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    content: &AlertContent,
    people: &[(Uuid, Option<Uuid>)],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let reasons = content.reasons.join(",");
    let rows = people.iter().map(|(person_id, coach_id)| {
        vec![
            Uuid::now_v7().into(),
            (*person_id).into(),
            task_id.into(),
            (*coach_id).into(),
            content.course.trim().into(),
            reasons.as_str().into(),
            content.suggestion.trim().into(),
            content.comment.trim().into(),
            actor.id.into(),
            now.into(),
        ]
    });
    insert_new::<_, alert::Entity>(
        db,
        &[
            alert::Column::Id,
            alert::Column::PersonId,
            alert::Column::TaskId,
            alert::Column::CoachId,
            alert::Column::Course,
            alert::Column::Reasons,
            alert::Column::Suggestion,
            alert::Column::Comment,
            alert::Column::RaisedBy,
            alert::Column::RaisedAt,
        ],
        (alert::Column::TaskId, alert::Column::PersonId),
        rows,
    )
    .await
}

/// The alert `alert_id`, if there is one.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    alert_id: Uuid,
) -> Result<Option<alert::Model>, CaseloadError> {
    Ok(alert::Entity::find_by_id(alert_id).one(db).await?)
}

/// Closes the alert `alert_id` as `closed_by` at `now`, unless it is closed already.
pub(crate) async fn close<C: ConnectionTrait>(
    db: &C,
    alert_id: Uuid,
    closed_by: Uuid,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    alert::Entity::update_many()
        .col_expr(alert::Column::ClosedAt, Expr::value(now))
        .col_expr(alert::Column::ClosedBy, Expr::value(closed_by))
        .filter(alert::Column::Id.eq(alert_id))
        .filter(alert::Column::ClosedAt.is_null())
        .exec(db)
        .await?;
    Ok(())
}

/// A person's alerts (at most 500), open ones first, newest first.
pub(crate) async fn of_person<C: ConnectionTrait>(
    db: &C,
    person_id: Uuid,
) -> Result<Vec<alert::Model>, CaseloadError> {
    Ok(alert::Entity::find()
        .filter(alert::Column::PersonId.eq(person_id))
        .order_by_asc(Expr::col(alert::Column::ClosedAt).is_not_null())
        .order_by_desc(alert::Column::RaisedAt)
        .limit(500)
        .all(db)
        .await?)
}

/// How many open alerts each of `person_ids` has (people without any are left out).
pub(crate) async fn open_counts<C: ConnectionTrait>(
    db: &C,
    person_ids: &[Uuid],
) -> Result<Vec<(Uuid, i64)>, CaseloadError> {
    Ok(alert::Entity::find()
        .select_only()
        .column(alert::Column::PersonId)
        .expr_as(Func::count(Expr::col(alert::Column::Id)), "open")
        .filter(
            alert::Column::PersonId
                .in_id_list(db.get_database_backend(), person_ids.iter().copied()),
        )
        .filter(alert::Column::ClosedAt.is_null())
        .group_by(alert::Column::PersonId)
        .into_tuple()
        .all(db)
        .await?)
}
