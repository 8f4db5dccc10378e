//! Owners told by email when their tasks end (each chooses: every end, failures only, or
//! never; `staff_user.task_emails`), by a periodic job on one node at a time.
//!
//! Each end is announced at most once, across nodes and crashes, in bulk email's three
//! steps with `task_notice (task_id, ended_at)` as the log: claim (`sending`, committed),
//! send, record. A row still `sending` from a run that died is marked `failed` rather than
//! sent again. A task an admin retries can end again; that end has its own key.

use std::time::Duration;

use bulkq_types::accounts::TaskEmails;
use bulkq_types::actions::component_label;
use chrono::{DateTime, Utc};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use queue::{Task, TaskStatus};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use crate::CaseloadError;
use crate::actions::summary::{StatusNames, summarize};
use crate::email::{Delivery, EmailContent, Mailer};
use crate::entity::{staff_user, task_notice as notice};

/// The job's name in the scheduler.
pub const TASK_NOTICE_JOB: &str = "caseload.task_notices";
/// How often the job looks for ended tasks: an owner hears within about this long.
const LOOK_EVERY: Duration = Duration::from_secs(30);
/// Ends older than this are not announced: a cluster down for a day does not send a day of
/// stale news, nor does the first start of this version mail about old tasks.
const LOOKBACK: Duration = Duration::from_secs(3600);
/// Ends announced per run at most; the next run takes the rest.
const PER_RUN: u64 = 200;
/// A `sending` row older than this belongs to a run that died mid-send.
const INTERRUPTED_AFTER: Duration = Duration::from_secs(600);

/// The job, run on one node at a time.
pub fn task_notice_job(mailer: Mailer) -> PeriodicJob {
    PeriodicJob::new(
        TASK_NOTICE_JOB,
        Schedule::Every(LOOK_EVERY),
        TaskNotices { mailer },
    )
    .with_lock_at_least_half_of(LOOK_EVERY)
}

struct TaskNotices {
    mailer: Mailer,
}

#[async_trait::async_trait]
impl PeriodicTask for TaskNotices {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let told = tell_owners(&ctx.store, &self.mailer)
            .await
            .map_err(|e| e.to_string())?;
        if told > 0 {
            tracing::info!(told, "owners told of their tasks' ends");
        }
        Ok(())
    }
}

/// One message to its owner per task end not yet announced that they asked to hear of;
/// returns how many were sent.
pub async fn tell_owners(store: &queue::Store, mailer: &Mailer) -> Result<u64, CaseloadError> {
    let now = store.clock().now();
    let lookback = chrono::Duration::from_std(LOOKBACK).unwrap_or(chrono::Duration::MAX);
    let since = now.checked_sub_signed(lookback).unwrap_or(now);
    let txn = store.begin_write().await?;
    fail_interrupted(&*txn, now).await?;
    let ended = store.tasks_ended_since(since, PER_RUN).await?;
    let mut claimed = Vec::new();
    for task in ended {
        let Some(ended_at) = task.workflow_stopped_date else {
            continue;
        };
        let Some(owner) = staff_user::Entity::find_by_id(task.owner_id)
            .one(&*txn)
            .await?
        else {
            continue;
        };
        let Some(address) = owner.email.clone().filter(|a| !a.trim().is_empty()) else {
            continue;
        };
        if !wants(TaskEmails::parse(&owner.task_emails), task.workflow_status)
            || !claim(&*txn, task.id, ended_at, now).await?
        {
            continue;
        }
        claimed.push((task, ended_at, owner.display_name, address));
    }
    let statuses = StatusNames::load(&*txn).await?;
    txn.commit().await.map_err(CaseloadError::Db)?;
    let mut sent = 0;
    for (task, ended_at, name, address) in claimed {
        let content = message(&task, &statuses);
        let delivery = mailer.send_to(&name, &address, &content).await;
        sent += u64::from(delivery == Delivery::Sent);
        let txn = store.begin_write().await?;
        record(&*txn, task.id, ended_at, &delivery, store.clock().now()).await?;
        txn.commit().await.map_err(CaseloadError::Db)?;
    }
    Ok(sent)
}

/// Whether an owner who chose `choice` hears of an end in `status`.
fn wants(choice: TaskEmails, status: TaskStatus) -> bool {
    match choice {
        TaskEmails::All => true,
        TaskEmails::Failures => matches!(status, TaskStatus::Failure | TaskStatus::Error),
        TaskEmails::None => false,
    }
}

/// Claims the end (`sending`); `false` if it was claimed before.
async fn claim<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    ended_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, CaseloadError> {
    let row = notice::ActiveModel {
        task_id: Set(task_id),
        ended_at: Set(ended_at),
        status: Set("sending".into()),
        detail: Set(None),
        updated_at: Set(now),
    };
    let inserted = notice::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([notice::Column::TaskId, notice::Column::EndedAt])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(inserted > 0)
}

async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let after = chrono::Duration::from_std(INTERRUPTED_AFTER).unwrap_or(chrono::Duration::MAX);
    let before = now.checked_sub_signed(after).unwrap_or(now);
    notice::Entity::update_many()
        .col_expr(notice::Column::Status, Expr::value("failed"))
        .col_expr(
            notice::Column::Detail,
            Expr::value("interrupted while sending; not sent again so that nobody gets it twice"),
        )
        .filter(notice::Column::Status.eq("sending"))
        .filter(notice::Column::UpdatedAt.lt(before))
        .exec(db)
        .await?;
    Ok(())
}

/// Records what became of one message. A deferral is not tried again: the news would be
/// stale by then, and the dashboard shows it anyway.
async fn record<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    ended_at: DateTime<Utc>,
    delivery: &Delivery,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    let (status, detail) = match delivery {
        Delivery::Sent => ("sent", None),
        Delivery::Transient(detail) | Delivery::RelayRefused(detail) => {
            ("deferred", Some(detail.clone()))
        }
        Delivery::Permanent(detail) => ("failed", Some(detail.clone())),
    };
    notice::Entity::update_many()
        .col_expr(notice::Column::Status, Expr::value(status))
        .col_expr(notice::Column::Detail, Expr::value(detail))
        .col_expr(notice::Column::UpdatedAt, Expr::value(now))
        .filter(notice::Column::TaskId.eq(task_id))
        .filter(notice::Column::EndedAt.eq(ended_at))
        .exec(db)
        .await?;
    Ok(())
}

/// The message: what the task was, how it ended and why.
fn message(task: &Task, statuses: &StatusNames) -> EmailContent {
    let summary = summarize(task, statuses);
    let how = match task.workflow_status {
        TaskStatus::Completed => "finished",
        TaskStatus::Abandoned => "was stopped",
        _ => "failed",
    };
    let mut body = format!(
        "Your task {how}: {summary}\n\nAction: {}\nStatus: {}\n",
        component_label(&task.execution_component_name),
        task.workflow_status.as_str()
    );
    if let Some(why) = task
        .workflow_status_desc
        .as_deref()
        .filter(|w| !w.is_empty())
    {
        body.push_str(&format!("Why: {why}\n"));
    }
    body.push_str(&format!("\nTask {} in bulkq.\n", task.id));
    EmailContent {
        subject: format!("Your task {how}: {}", first_line(&summary)),
        body,
        cc: Vec::new(),
    }
}

/// A subject fits on one line and within the subject limit.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(120).collect()
}
