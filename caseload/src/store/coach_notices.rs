//! The `coach_notice` rows: which coaches a task has told of their people, read with the
//! people each is told of (a task's alerts or coach changes).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, ExprTrait, IntoColumnRef, IntoTableRef, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, QueryFilter, QueryOrder,
    QuerySelect,
};
use uuid::Uuid;

use super::entity::{coach_change, coach_notice as notice, early_alert, person};
use super::sends::{self, recorded};
use crate::CaseloadError;
use crate::coach_notices::News;
use crate::email::SendStatus;

/// The `(coach, person)` pairs of task `task_id`'s `news`.
fn pairs(news: News, task_id: Uuid) -> SelectStatement {
    let (table, coach, person, task) = match news {
        News::EarlyAlerts => (
            early_alert::Entity.into_table_ref(),
            early_alert::Column::CoachId.into_column_ref(),
            early_alert::Column::PersonId.into_column_ref(),
            early_alert::Column::TaskId.into_column_ref(),
        ),
        News::NewPeople => (
            coach_change::Entity.into_table_ref(),
            coach_change::Column::ToCoachId.into_column_ref(),
            coach_change::Column::PersonId.into_column_ref(),
            coach_change::Column::TaskId.into_column_ref(),
        ),
    };
    Query::select()
        .expr_as(Expr::col(coach.clone()), "coach_id")
        .expr_as(Expr::col(person), "person_id")
        .from(table)
        .and_where(Expr::col(task).eq(task_id))
        .and_where(Expr::col(coach).is_not_null())
        .to_owned()
}

/// [`pairs`] of the people `ids` only: the ids bound as one parameter (ADR 0014), which
/// PostgreSQL looks up in the task's `(task_id, person_id)` index.
fn pairs_among(news: News, task_id: Uuid, backend: DbBackend, ids: Vec<Uuid>) -> SelectStatement {
    let among = match news {
        News::EarlyAlerts => early_alert::Column::PersonId.in_id_list(backend, ids),
        News::NewPeople => coach_change::Column::PersonId.in_id_list(backend, ids),
    };
    pairs(news, task_id).and_where(among).to_owned()
}

/// Marks `failed` (interrupted) the notices of task `task_id` still `sending`; returns how
/// many.
pub(crate) async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    let scope = sea_orm::Condition::all().add(notice::Column::TaskId.eq(task_id));
    sends::fail_interrupted::<notice::Entity, _>(db, scope, now).await
}

/// Claims (`sending`) up to `limit` coaches of task `task_id`'s `news` that have no notice
/// of the task yet, in id order; returns them.
pub(crate) async fn claim_untold<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let untold = Query::select()
        .distinct()
        .column("coach_id")
        .from_subquery(pairs(news, task_id), "pairs")
        .and_where(
            Expr::col("coach_id").not_in_subquery(
                Query::select()
                    .column(notice::Column::CoachId)
                    .from(notice::Entity)
                    .and_where(notice::Column::TaskId.eq(task_id))
                    .to_owned(),
            ),
        )
        .order_by("coach_id", sea_orm::Order::Asc)
        .limit(limit)
        .to_owned();
    let mut ids: Vec<Uuid> = Vec::new();
    for row in db.query_all(&untold).await? {
        ids.push(row.try_get("", "coach_id")?);
    }
    for id in &ids {
        let row = notice::ActiveModel {
            task_id: sea_orm::Set(task_id),
            coach_id: sea_orm::Set(*id),
            status: sea_orm::Set(SendStatus::Sending.as_str().into()),
            attempts: sea_orm::Set(1),
            detail: sea_orm::Set(None),
            updated_at: sea_orm::Set(now),
        };
        notice::Entity::insert(row)
            .exec_without_returning(db)
            .await?;
    }
    Ok(ids)
}

/// Claims (`sending`) again, counting the attempt, up to `limit` coaches of task `task_id`
/// deferred before `deferred_before`; returns them.
pub(crate) async fn claim_deferred<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    deferred_before: DateTime<Utc>,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let retry: Vec<Uuid> = notice::Entity::find()
        .select_only()
        .column(notice::Column::CoachId)
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::Status.eq(SendStatus::Deferred.as_str()))
        .filter(notice::Column::UpdatedAt.lt(deferred_before))
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?;
    for id in &retry {
        notice::Entity::update_many()
            .col_expr(
                notice::Column::Status,
                Expr::value(SendStatus::Sending.as_str()),
            )
            .col_expr(
                notice::Column::Attempts,
                Expr::col(notice::Column::Attempts).add(1),
            )
            .col_expr(notice::Column::UpdatedAt, Expr::value(now))
            .filter(notice::Column::TaskId.eq(task_id))
            .filter(notice::Column::CoachId.eq(*id))
            .exec(db)
            .await?;
    }
    Ok(retry)
}

/// A person as a notice names them.
#[derive(Debug, Clone, FromQueryResult)]
pub(crate) struct Listed {
    pub id: Uuid,
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
}

/// How many people task `task_id`'s `news` tells each of `coaches` of (coaches with none
/// are absent), in one pass over the task's people.
pub(crate) async fn counts_told<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    coaches: &[Uuid],
) -> Result<HashMap<Uuid, u64>, CaseloadError> {
    let counts = Query::select()
        .column("coach_id")
        .expr_as(Expr::col("person_id").count(), "told")
        .from_subquery(pairs(news, task_id), "pairs")
        .and_where(Expr::col("coach_id").is_in(coaches.iter().copied()))
        .group_by_col("coach_id")
        .to_owned();
    let mut told = HashMap::with_capacity(coaches.len());
    for row in db.query_all(&counts).await? {
        let count: i64 = row.try_get("", "told")?;
        told.insert(row.try_get("", "coach_id")?, count.unsigned_abs());
    }
    Ok(told)
}

/// Up to this many people told of, a coach's list is sorted from all of them; beyond it,
/// read from the coach's people in name order (see [`people_listed`]).
const LIST_SORTED_MAX: u64 = 2_000;

/// People of a coach read per step of a name-ordered list.
const LIST_PAGE: u64 = 1_000;

/// The first `limit` people by name of the `told` that task `task_id`'s `news` tells `coach`
/// of.
///
/// Why two ways: sorting them all read every person the task changed (a quarter of a second
/// per coach for a million). Many are found faster among the people the coach has now, in
/// name order from their index, a page at a time, each page checked against the task's;
/// someone moved to another coach since is then counted but not listed.
pub(crate) async fn people_listed<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    coach: Uuid,
    told: u64,
    limit: u64,
) -> Result<Vec<Listed>, CaseloadError> {
    let theirs = |pairs: SelectStatement| {
        Query::select()
            .column("person_id")
            .from_subquery(pairs, "pairs")
            .and_where(Expr::col("coach_id").eq(coach))
            .to_owned()
    };
    let by_name = |people: sea_orm::Select<person::Entity>| {
        people
            .select_only()
            .column(person::Column::Id)
            .column(person::Column::SchoolId)
            .column(person::Column::FirstName)
            .column(person::Column::LastName)
            .order_by_asc(person::Column::LastName)
            .order_by_asc(person::Column::FirstName)
            .order_by_asc(person::Column::Id)
    };
    if told <= LIST_SORTED_MAX {
        let theirs = theirs(pairs(news, task_id));
        let people = person::Entity::find().filter(person::Column::Id.in_subquery(theirs));
        return Ok(by_name(people).limit(limit).into_model().all(db).await?);
    }
    let mut listed = Vec::new();
    let mut after: Option<Listed> = None;
    loop {
        let mut page = person::Entity::find().filter(person::Column::CoachId.eq(coach));
        if let Some(last) = &after {
            page = page.filter(
                Expr::tuple([
                    Expr::col(person::Column::LastName),
                    Expr::col(person::Column::FirstName),
                    Expr::col(person::Column::Id),
                ])
                .gt(Expr::tuple([
                    Expr::val(last.last_name.as_str()),
                    Expr::val(last.first_name.as_str()),
                    Expr::val(last.id),
                ])),
            );
        }
        let page: Vec<Listed> = by_name(page).limit(LIST_PAGE).into_model().all(db).await?;
        let ids: Vec<Uuid> = page.iter().map(|person| person.id).collect();
        let mut of_task: HashSet<Uuid> = HashSet::new();
        let among = pairs_among(news, task_id, db.get_database_backend(), ids);
        for row in db.query_all(&theirs(among)).await? {
            of_task.insert(row.try_get("", "person_id")?);
        }
        let full = page.len() as u64 == LIST_PAGE;
        after = page.last().cloned();
        listed.extend(
            page.into_iter()
                .filter(|person| of_task.contains(&person.id)),
        );
        if listed.len() as u64 >= limit || !full {
            listed.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            return Ok(listed);
        }
    }
}

/// Records what became of the notice of task `task_id` to `coach`, still `sending`
/// (`status`, and why if it was not sent); returns the row as recorded, if it was still
/// `sending`.
pub(crate) async fn record<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    coach: Uuid,
    (status, detail): (SendStatus, Option<&str>),
    now: DateTime<Utc>,
) -> Result<Vec<notice::Model>, CaseloadError> {
    Ok(notice::Entity::update_many()
        .col_expr(
            notice::Column::Status,
            recorded(status, notice::Column::Attempts),
        )
        .col_expr(notice::Column::Detail, Expr::value(detail))
        .col_expr(notice::Column::UpdatedAt, Expr::value(now))
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::CoachId.eq(coach))
        .filter(notice::Column::Status.eq(SendStatus::Sending.as_str()))
        .exec_with_returning(db)
        .await?)
}
