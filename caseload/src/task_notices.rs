//! Owners told by email when their tasks end (each chooses: every end, failures only, or
//! never; `staff_user.task_emails`), and admins who asked (`failure_alerts`) of every task
//! that fails, by a periodic job on one node at a time.
//!
//! Each end is announced to each person at most once, across nodes and crashes, in bulk
//! email's three steps with `task_notice (task_id, ended_at, recipient_id)` as the log:
//! claim (`sending`, committed), send, record. A row still `sending` from a run that died is marked `failed` rather than
//! sent again. A task an admin retries can end again; that end has its own key.

use std::sync::Mutex;
use std::time::Duration;

use bulkq_types::accounts::TaskEmails;
use bulkq_types::actions::component_label;
use chrono::{DateTime, Utc};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use queue::{Task, TaskStatus, WriteClass};
use uuid::Uuid;

use crate::CaseloadError;
use crate::actions::summary::{StatusNames, summarize};
use crate::admin_alerts::failure_event;
use crate::admin_alerts::webhook::webhook_task;
use crate::email::{Delivery, EmailContent, Mailer};
use crate::store::entity::staff_user;
use crate::store::{task_notices as log, users};

/// The job's name in the scheduler.
pub const TASK_NOTICE_JOB: &str = "caseload.task_notices";
/// How often the job looks for ended tasks: an owner hears within about this long.
const LOOK_EVERY: Duration = Duration::from_secs(30);
/// Ends older than this are not announced: a cluster down for a day does not send a day of
/// stale news, nor does the first start of this version mail about old tasks.
const LOOKBACK: Duration = Duration::from_secs(3600);
/// Ended tasks read at a time.
const PER_PAGE: u64 = 200;
/// How far back a run reads from where the previous one on this node stopped: an end is
/// written with its worker's time and committed a moment later, so one committed late is
/// still read. Ends read twice are claimed once.
const LATE_COMMITS: Duration = Duration::from_secs(120);
/// A `sending` row older than this belongs to a run that died mid-send.
const INTERRUPTED_AFTER: Duration = Duration::from_secs(600);

/// The job, run on one node at a time; with `post_failures`, each failure is also posted
/// to the admins' webhook.
pub fn task_notice_job(mailer: Mailer, post_failures: bool) -> PeriodicJob {
    PeriodicJob::new(
        TASK_NOTICE_JOB,
        Schedule::Every(LOOK_EVERY),
        TaskNotices {
            mailer,
            post_failures,
            read_up_to: Mutex::new(None),
        },
    )
    .with_lock_at_least_half_of(LOOK_EVERY)
}

struct TaskNotices {
    mailer: Mailer,
    post_failures: bool,
    /// When the last run on this node began: the next reads from a little before it, not
    /// the whole look-back.
    read_up_to: Mutex<Option<DateTime<Utc>>>,
}

#[async_trait::async_trait]
impl PeriodicTask for TaskNotices {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let began = ctx.store.clock().now();
        let previous = *self.read_up_to.lock().unwrap_or_else(|e| e.into_inner());
        let from = previous.map(|at| at - duration(LATE_COMMITS));
        let told = tell_owners_since(&ctx.store, &self.mailer, self.post_failures, from)
            .await
            .map_err(|e| e.to_string())?;
        *self.read_up_to.lock().unwrap_or_else(|e| e.into_inner()) = Some(began);
        if told > 0 {
            tracing::info!(told, "owners told of their tasks' ends");
        }
        Ok(())
    }
}

/// Someone a task's end is told to.
struct Recipient {
    id: Uuid,
    name: String,
    address: String,
    /// Whose task it is, for an admin's alert; `None` for the owner.
    alerted_of: Option<String>,
}

/// One message per task end not yet announced and person who asked to hear of it (its
/// owner, as they chose; admins with failure alerts, of every failure); returns how many
/// were sent.
/// With `post_failures`, each failure is also posted to the admins' webhook, once.
pub async fn tell_owners(
    store: &queue::Store,
    mailer: &Mailer,
    post_failures: bool,
) -> Result<u64, CaseloadError> {
    tell_owners_since(store, mailer, post_failures, None).await
}

/// [`tell_owners`] of the ends at or after `from`, or the whole look-back if that is longer
/// ago or not given, a page of ended tasks at a time.
async fn tell_owners_since(
    store: &queue::Store,
    mailer: &Mailer,
    post_failures: bool,
    from: Option<DateTime<Utc>>,
) -> Result<u64, CaseloadError> {
    let now = store.clock().now();
    let lookback = now.checked_sub_signed(duration(LOOKBACK)).unwrap_or(now);
    let since = from.map_or(lookback, |from| from.max(lookback));
    let mut after = None;
    let mut sent = 0;
    loop {
        let ended = store.tasks_ended_since(since, after, PER_PAGE).await?;
        let Some(last) = ended.last() else {
            break;
        };
        after = last.workflow_stopped_date.map(|stopped| (stopped, last.id));
        let full = ended.len() as u64 == PER_PAGE;
        sent += tell_page(store, mailer, post_failures, ended).await?;
        if !full {
            break;
        }
    }
    Ok(sent)
}

fn duration(length: Duration) -> chrono::Duration {
    chrono::Duration::from_std(length).unwrap_or(chrono::Duration::MAX)
}

/// Claims, sends and records the messages of one page of ended tasks; how many were sent.
async fn tell_page(
    store: &queue::Store,
    mailer: &Mailer,
    post_failures: bool,
    ended: Vec<Task>,
) -> Result<u64, CaseloadError> {
    let now = store.clock().now();
    let mut txn = store.begin_queue_as(WriteClass::Background).await?;
    let interrupted = now
        .checked_sub_signed(duration(INTERRUPTED_AFTER))
        .unwrap_or(now);
    log::fail_interrupted(&*txn, interrupted, now).await?;
    let alerted = users::alerted_admins(&*txn).await?;
    let mut claimed = Vec::new();
    for task in ended {
        let Some(ended_at) = task.workflow_stopped_date else {
            continue;
        };
        let Some(owner) = users::find(&*txn, task.owner_id).await? else {
            continue;
        };
        let mut recipients = Vec::new();
        if wants(TaskEmails::parse(&owner.task_emails), task.workflow_status)
            && let Some(address) = address_of(&owner)
        {
            recipients.push(Recipient {
                id: owner.id,
                name: owner.display_name.clone(),
                address,
                alerted_of: None,
            });
        }
        let failed = matches!(
            task.workflow_status,
            TaskStatus::Failure | TaskStatus::Error
        );
        if failed
            && post_failures
            && let Some(event) = failure_event(&task, ended_at, &owner.display_name)
        {
            // Once per end, however often it is read and by however many nodes.
            txn.enqueue_once(webhook_task(&event)?).await?;
        }
        if failed {
            for admin in alerted.iter().filter(|admin| admin.id != owner.id) {
                if let Some(address) = address_of(admin) {
                    recipients.push(Recipient {
                        id: admin.id,
                        name: admin.display_name.clone(),
                        address,
                        alerted_of: Some(owner.display_name.clone()),
                    });
                }
            }
        }
        for recipient in recipients {
            if log::claim(&*txn, task.id, ended_at, recipient.id, now).await? {
                claimed.push((task.clone(), ended_at, recipient));
            }
        }
    }
    let statuses = StatusNames::load(&*txn).await?;
    txn.commit().await?;
    let mut sent = 0;
    for (task, ended_at, recipient) in claimed {
        let content = message(&task, &statuses, recipient.alerted_of.as_deref());
        let delivery = mailer
            .send_to(&recipient.name, &recipient.address, &content)
            .await;
        sent += u64::from(delivery == Delivery::Sent);
        let txn = store.begin_write().await?;
        let key = (task.id, ended_at, recipient.id);
        log::record(&*txn, key, delivery.outcome(), store.clock().now()).await?;
        txn.commit().await.map_err(CaseloadError::Db)?;
    }
    Ok(sent)
}

/// The address a user is told things at, if they gave one.
fn address_of(user: &staff_user::Model) -> Option<String> {
    user.email
        .clone()
        .filter(|address| !address.trim().is_empty())
}

/// Whether an owner who chose `choice` hears of an end in `status`.
fn wants(choice: TaskEmails, status: TaskStatus) -> bool {
    match choice {
        TaskEmails::All => true,
        TaskEmails::Failures => matches!(status, TaskStatus::Failure | TaskStatus::Error),
        TaskEmails::None => false,
    }
}

/// The message: what the task was, how it ended and why; for an admin alerted of another's
/// failure, whose task it was.
fn message(task: &Task, statuses: &StatusNames, alerted_of: Option<&str>) -> EmailContent {
    let summary = summarize(task, statuses);
    let how = match task.workflow_status {
        TaskStatus::Completed => "finished",
        TaskStatus::Abandoned => "was stopped",
        _ => "failed",
    };
    let whose = match alerted_of {
        Some(owner) => format!("A task of {owner}"),
        None => "Your task".to_owned(),
    };
    let mut body = format!(
        "{whose} {how}: {summary}\n\nAction: {}\nStatus: {}\n",
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
        subject: format!("{whose} {how}: {}", first_line(&summary)),
        body,
        cc: Vec::new(),
    }
}

/// A subject fits on one line and within the subject limit.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(120).collect()
}
