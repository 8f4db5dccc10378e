//! Coach notices: after a bulk task has changed people (raised their alerts, moved them to a
//! new coach), one email to each coach concerned, listing their people. At most one per
//! coach per task, however often the task is run again, in the three steps of bulk email
//! (see [`crate::email`]) with `coach_notice` as the log:
//!
//! ```text
//! claim   (txn: a 'sending' row per coach not yet told)
//! send    (no transaction)
//! record  (txn: 'sent' / 'deferred' / 'failed')
//! ```
//!
//! A row still `sending` when an attempt starts belongs to an attempt that died mid-send, so
//! it is marked `failed` rather than risk a second message. Only coaches of people the task
//! changed are told: a coach whose people all failed gets nothing.

use bulkq_types::words::plural;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, IntoColumnRef, IntoTableRef, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use uuid::Uuid;

use crate::CaseloadError;
use crate::email::{Delivery, EmailContent, INTERRUPTED, Mailer, SendStatus};
use crate::store::entity::{coach_change, coach_notice as notice, early_alert, person, staff_user};

/// The most people a notice names; the rest are counted ("and 1,200 more").
pub const PEOPLE_LISTED: u64 = 100;

/// Coaches claimed per transaction.
const COACHES_PER_CLAIM: u64 = 50;

/// What a task tells the coaches of the people it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum News {
    /// Early alerts raised for their people (`early_alert.coach_id`).
    EarlyAlerts,
    /// People moved into their caseload (`coach_change.to_coach_id`).
    NewPeople,
}

impl News {
    /// The `(coach, person)` pairs of task `task_id`'s changes.
    fn pairs(self, task_id: Uuid) -> SelectStatement {
        let (table, coach, person, task) = match self {
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

    fn subject(self, people: u64) -> String {
        let people = plural(people, "person", "people");
        match self {
            News::EarlyAlerts => format!("Early alerts for {people} you coach"),
            News::NewPeople => format!("{people} moved to your caseload"),
        }
    }

    fn opening(self, people: u64) -> String {
        let people = plural(people, "person", "people");
        match self {
            News::EarlyAlerts => format!("An early alert was raised for {people} you coach:"),
            News::NewPeople => format!("{people} moved to your caseload:"),
        }
    }
}

/// A coach to tell, as claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coach {
    pub id: Uuid,
    pub name: String,
    /// `None`: nothing can be sent (recorded as `no_address`).
    pub address: Option<String>,
}

/// How many coaches a step told or could not tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Told {
    pub told: u64,
    pub not_told: u64,
    pub deferred: u64,
}

/// Marks as failed the notices of task `task_id` an earlier attempt claimed but never
/// recorded. Call it once when the notices begin, before claiming.
pub async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    Ok(notice::Entity::update_many()
        .col_expr(
            notice::Column::Status,
            Expr::value(SendStatus::Failed.as_str()),
        )
        .col_expr(notice::Column::Detail, Expr::value(INTERRUPTED))
        .col_expr(notice::Column::UpdatedAt, Expr::value(now))
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::Status.eq(SendStatus::Sending.as_str()))
        .exec(db)
        .await?
        .rows_affected)
}

/// Claims up to [`COACHES_PER_CLAIM`] coaches of task `task_id`'s `news` not yet told (or
/// deferred before `deferred_before`, with attempts left), marking them `sending`.
pub async fn claim<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    deferred_before: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<Coach>, CaseloadError> {
    let untold = Query::select()
        .distinct()
        .column("coach_id")
        .from_subquery(news.pairs(task_id), "pairs")
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
        .limit(COACHES_PER_CLAIM)
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
    let room = COACHES_PER_CLAIM.saturating_sub(ids.len() as u64);
    let retry: Vec<Uuid> = notice::Entity::find()
        .select_only()
        .column(notice::Column::CoachId)
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::Status.eq(SendStatus::Deferred.as_str()))
        .filter(notice::Column::UpdatedAt.lt(deferred_before))
        .limit(room)
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
    ids.extend(retry);
    let mut coaches = Vec::with_capacity(ids.len());
    for id in ids {
        let user = staff_user::Entity::find_by_id(id).one(db).await?;
        coaches.push(Coach {
            id,
            name: user
                .as_ref()
                .map_or_else(String::new, |u| u.display_name.clone()),
            address: user.and_then(|u| u.email).filter(|a| !a.trim().is_empty()),
        });
    }
    Ok(coaches)
}

#[derive(Debug, FromQueryResult)]
struct Listed {
    school_id: String,
    first_name: String,
    last_name: String,
}

/// The message telling `coach` of their people in task `task_id`'s `news`: how many, the
/// first [`PEOPLE_LISTED`] by name, then `details` (the alert's course and reasons).
pub async fn message<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    coach: Uuid,
    details: &str,
) -> Result<EmailContent, CaseloadError> {
    let theirs = Query::select()
        .column("person_id")
        .from_subquery(news.pairs(task_id), "pairs")
        .and_where(Expr::col("coach_id").eq(coach))
        .to_owned();
    let people = person::Entity::find().filter(person::Column::Id.in_subquery(theirs));
    let count = people.clone().count(db).await?;
    let listed = people
        .select_only()
        .column(person::Column::SchoolId)
        .column(person::Column::FirstName)
        .column(person::Column::LastName)
        .order_by_asc(person::Column::LastName)
        .order_by_asc(person::Column::FirstName)
        .limit(PEOPLE_LISTED)
        .into_model::<Listed>()
        .all(db)
        .await?;
    let mut body = news.opening(count);
    body.push_str("\n\n");
    for person in &listed {
        body.push_str(&format!(
            "- {}, {} ({})\n",
            person.last_name, person.first_name, person.school_id
        ));
    }
    let more = count.saturating_sub(listed.len() as u64);
    if more > 0 {
        body.push_str(&format!(
            "- and {} more\n",
            plural(more, "person", "people")
        ));
    }
    if !details.is_empty() {
        body.push_str(&format!("\n{details}\n"));
    }
    body.push_str(&format!("\nTask {task_id} in bulkq.\n"));
    Ok(EmailContent {
        subject: news.subject(count),
        body,
        cc: Vec::new(),
    })
}

/// Sends one coach's notice, or says why it cannot be sent.
pub async fn deliver(mailer: &Mailer, coach: &Coach, content: &EmailContent) -> Option<Delivery> {
    let address = coach.address.as_deref()?;
    Some(mailer.send_to(&coach.name, address, content).await)
}

/// Records what became of one coach's notice (`None`: no address on file).
pub async fn record<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    coach: Uuid,
    delivery: Option<&Delivery>,
    now: DateTime<Utc>,
) -> Result<Told, CaseloadError> {
    let (status, detail) = match delivery {
        None => (
            SendStatus::NoAddress,
            Some("the coach has no email address on file"),
        ),
        Some(delivery) => delivery.outcome(),
    };
    let rows = notice::Entity::update_many()
        .col_expr(
            notice::Column::Status,
            status.recorded(notice::Column::Attempts),
        )
        .col_expr(notice::Column::Detail, Expr::value(detail))
        .col_expr(notice::Column::UpdatedAt, Expr::value(now))
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::CoachId.eq(coach))
        .filter(notice::Column::Status.eq(SendStatus::Sending.as_str()))
        .exec_with_returning(db)
        .await?;
    let mut told = Told::default();
    for row in rows {
        if row.status == SendStatus::Sent.as_str() {
            told.told += 1;
        } else if row.status == SendStatus::Deferred.as_str() {
            told.deferred += 1;
        } else {
            told.not_told += 1;
        }
    }
    Ok(told)
}
