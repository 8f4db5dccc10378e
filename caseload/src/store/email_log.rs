//! The `email_send_log` rows: bulk email's recipients of each task, claimed before the
//! message is sent and recorded after, and forgotten once past their retention.

use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect,
    Statement,
};
use uuid::Uuid;

use super::entity::{email_send_log as log, person};
use super::once_per_task::insert_new;
use super::sends::{self, recorded};
use crate::CaseloadError;
use crate::email::SendStatus;

/// Inserts a `sending` row for each of `people` (their address as the recipient) unless task
/// `task_id` has one for them already; returns the people newly claimed.
pub(crate) async fn claim<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    people: &[person::Model],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let rows = people.iter().map(|person| {
        vec![
            task_id.into(),
            person.id.into(),
            person.email.clone().unwrap_or_default().into(),
            SendStatus::Sending.as_str().into(),
            1.into(),
            now.into(),
        ]
    });
    insert_new::<_, log::Entity>(
        db,
        &[
            log::Column::TaskId,
            log::Column::PersonId,
            log::Column::Recipient,
            log::Column::Status,
            log::Column::Attempts,
            log::Column::UpdatedAt,
        ],
        (log::Column::TaskId, log::Column::PersonId),
        rows,
    )
    .await
}

/// Marks `sending` again, counting the attempt, up to `limit` recipients of task `task_id`
/// deferred before `deferred_before`; returns them.
pub(crate) async fn claim_deferred<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    deferred_before: DateTime<Utc>,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let ids: Vec<Uuid> = log::Entity::find()
        .select_only()
        .column(log::Column::PersonId)
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::Status.eq(SendStatus::Deferred.as_str()))
        .filter(log::Column::UpdatedAt.lt(deferred_before))
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?;
    if ids.is_empty() {
        return Ok(ids);
    }
    log::Entity::update_many()
        .col_expr(
            log::Column::Status,
            Expr::value(SendStatus::Sending.as_str()),
        )
        .col_expr(
            log::Column::Attempts,
            Expr::col(log::Column::Attempts).add(1),
        )
        .col_expr(log::Column::UpdatedAt, Expr::value(now))
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::PersonId.in_id_list(db.get_database_backend(), ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(ids)
}

/// The address each of `person_ids` was claimed with for task `task_id`.
pub(crate) async fn addresses<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    person_ids: &[Uuid],
) -> Result<Vec<(Uuid, String)>, CaseloadError> {
    Ok(log::Entity::find()
        .select_only()
        .column(log::Column::PersonId)
        .column(log::Column::Recipient)
        .filter(log::Column::TaskId.eq(task_id))
        .filter(
            log::Column::PersonId.in_id_list(db.get_database_backend(), person_ids.iter().copied()),
        )
        .into_tuple()
        .all(db)
        .await?)
}

/// The recipients of task `task_id` still `sending`: claimed by an attempt that died.
pub(crate) async fn sending_people<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
) -> Result<Vec<Uuid>, CaseloadError> {
    Ok(log::Entity::find()
        .select_only()
        .column(log::Column::PersonId)
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::Status.eq(SendStatus::Sending.as_str()))
        .into_tuple()
        .all(db)
        .await?)
}

/// Marks `failed` (interrupted) the recipients of task `task_id` still `sending`; returns
/// how many.
pub(crate) async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    let scope = sea_orm::Condition::all().add(log::Column::TaskId.eq(task_id));
    sends::fail_interrupted::<log::Entity, _>(db, scope, now).await
}

/// Records as sent the recipients `sent` of task `task_id` still `sending`; returns how
/// many.
pub(crate) async fn record_sent<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    sent: Vec<Uuid>,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    Ok(log::Entity::update_many()
        .col_expr(log::Column::Status, Expr::value(SendStatus::Sent.as_str()))
        .col_expr(log::Column::Detail, Expr::value(Option::<String>::None))
        .col_expr(log::Column::UpdatedAt, Expr::value(now))
        .col_expr(log::Column::SentAt, Expr::value(now))
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::Status.eq(SendStatus::Sending.as_str()))
        .filter(log::Column::PersonId.in_id_list(db.get_database_backend(), sent))
        .exec(db)
        .await?
        .rows_affected)
}

/// Records that the message to `person_id`, still `sending`, was not sent (`status`, and
/// why); returns the row as recorded, if it was still `sending`.
pub(crate) async fn record_unsent<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    person_id: Uuid,
    (status, detail): (SendStatus, &str),
    now: DateTime<Utc>,
) -> Result<Vec<log::Model>, CaseloadError> {
    Ok(log::Entity::update_many()
        .col_expr(log::Column::Status, recorded(status, log::Column::Attempts))
        .col_expr(log::Column::Detail, Expr::value(detail))
        .col_expr(log::Column::UpdatedAt, Expr::value(now))
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::PersonId.eq(person_id))
        .filter(log::Column::Status.eq(SendStatus::Sending.as_str()))
        .exec_with_returning(db)
        .await?)
}

/// How many recipients of task `task_id` are deferred.
pub(crate) async fn deferred_count<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
) -> Result<u64, CaseloadError> {
    Ok(log::Entity::find()
        .filter(log::Column::TaskId.eq(task_id))
        .filter(log::Column::Status.eq(SendStatus::Deferred.as_str()))
        .count(db)
        .await?)
}

/// Deletes at most `limit` send log rows last changed before `before` whose task is not
/// waiting or running; answers how many.
pub(crate) async fn delete_forgotten_sends<C: ConnectionTrait>(
    db: &C,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<u64, CaseloadError> {
    let backend = db.get_database_backend();
    let placeholder = match backend {
        DbBackend::Postgres => "$1",
        _ => "?",
    };
    let sql = format!(
        "DELETE FROM email_send_log WHERE (task_id, person_id) IN ( \
           SELECT sent.task_id, sent.person_id FROM email_send_log sent \
           WHERE sent.updated_at < {placeholder} AND NOT EXISTS ( \
             SELECT 1 FROM queue_task task WHERE task.id = sent.task_id \
             AND task.workflow_status IN ('QUEUED', 'SCHEDULING', 'EXECUTING')) \
           LIMIT {limit})"
    );
    let deleted = db
        .execute_raw(Statement::from_sql_and_values(
            backend,
            sql,
            [before.into()],
        ))
        .await?;
    Ok(deleted.rows_affected())
}
