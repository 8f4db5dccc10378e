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
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::email::{Delivery, EmailContent, Mailer, SendStatus, UntilRefused};
use crate::store;

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
    store::coach_notices::fail_interrupted(db, task_id, now).await
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
    let mut ids =
        store::coach_notices::claim_untold(db, task_id, news, COACHES_PER_CLAIM, now).await?;
    let room = COACHES_PER_CLAIM.saturating_sub(ids.len() as u64);
    let retry =
        store::coach_notices::claim_deferred(db, task_id, deferred_before, room, now).await?;
    ids.extend(retry);
    let mut coaches = Vec::with_capacity(ids.len());
    for id in ids {
        let user = store::users::find(db, id).await?;
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

/// The messages telling each of `coaches` of their people in task `task_id`'s `news`, in
/// order: how many, the first [`PEOPLE_LISTED`] by name, then `details` (the alert's course
/// and reasons).
///
/// The counts come from one pass over the task's people for all the coaches: counting each
/// coach's apart read all of the task's people once per coach.
pub async fn messages<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    news: News,
    coaches: &[Uuid],
    details: &str,
) -> Result<Vec<EmailContent>, CaseloadError> {
    let counts = store::coach_notices::counts_told(db, task_id, news, coaches).await?;
    let mut messages = Vec::with_capacity(coaches.len());
    for coach in coaches {
        let count = counts.get(coach).copied().unwrap_or_default();
        let listed =
            store::coach_notices::people_listed(db, task_id, news, *coach, count, PEOPLE_LISTED)
                .await?;
        messages.push(message(task_id, news, count, &listed, details));
    }
    Ok(messages)
}

/// The message telling a coach of `count` people, `listed` first.
fn message(
    task_id: Uuid,
    news: News,
    count: u64,
    listed: &[store::coach_notices::Listed],
    details: &str,
) -> EmailContent {
    let mut body = news.opening(count);
    body.push_str("\n\n");
    for person in listed {
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
    EmailContent {
        subject: news.subject(count),
        body,
        cc: Vec::new(),
    }
}

/// Sends one coach's notice, or says why it cannot be sent (no address on file; `None`), or
/// why it was not tried (the relay refused an earlier send of the `run`).
pub async fn deliver(
    mailer: &Mailer,
    coach: &Coach,
    content: &EmailContent,
    run: &UntilRefused,
) -> Option<Delivery> {
    let address = coach.address.as_deref()?;
    Some(
        run.send(mailer.send_to(&coach.name, address, content))
            .await,
    )
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
    let rows = store::coach_notices::record(db, task_id, coach, (status, detail), now).await?;
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
