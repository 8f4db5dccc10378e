//! Bulk email: one message per targeted person with an address, each person at most once per
//! task, even across crashes and retries.
//!
//! Sending is a side effect no transaction can undo, so a batch goes through three steps, and
//! the executor runs the first and last inside its checkpointed batch transactions:
//!
//! ```text
//! claim_recipients  (txn: log rows 'sending' + checkpoint)      ─┐
//! Mailer::send      (no transaction; one SMTP message per person) │ per batch
//! record_outcomes   (txn: 'sent' / 'deferred' / 'failed' + checkpoint)
//! ```
//!
//! A row still `sending` when an attempt starts belongs to an attempt that died between
//! sending and recording; the message may or may not have gone out, so
//! [`fail_interrupted`] marks it `failed` instead of sending again: at most once wins over at
//! least once. A transient failure (SMTP 4xx, connection refused, timeout) is `deferred`, and
//! [`claim_deferred`] hands it out again, up to [`MAX_SEND_ATTEMPTS`] times; a permanent one
//! (5xx, an unusable address) is `failed` at once. A relay that refuses this node itself (bad
//! credentials, an untrusted certificate) leaves its recipients `deferred` and fails the task:
//! no retry helps until an admin fixes the settings; no send of the batch starts after the
//! first refusal ([`UntilRefused`]). Sending happens outside any transaction,
//! so a slow relay never holds SQLite's write lock.

pub mod log_retention;
mod mailer;
mod relay_pool;
pub mod send_rate;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use lettre::message::Mailbox;
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use mailer::{MailTransport, Mailer, SmtpCredentials, SmtpRelay, SmtpSecurity};

use crate::CaseloadError;
use crate::access::{Actor, BatchReport, load_targets};
use crate::search::people_by_ids;
use crate::store;
use crate::store::entity::person;
use bulkq_types::outcomes::PersonOutcome;
use bulkq_types::text::{Lines, control_character_problem};

/// Sends of one recipient after which a transient failure counts as permanent.
///
/// Above the task's own attempt budget (the queue's default of 5), so that when the relay
/// keeps answering "later" it is the task that runs out first and ends in FAILURE with its
/// recipients still deferred: an admin retries it once the relay is fixed, and nobody was
/// written off because of an outage. This cap only ends retries that go on beyond that.
pub const MAX_SEND_ATTEMPTS: i32 = 10;
/// The longest subject accepted.
pub const MAX_SUBJECT_LEN: usize = 200;
/// The longest body accepted, in bytes.
pub const MAX_BODY_LEN: usize = 100_000;
/// The most cc addresses; every message carries all of them.
pub const MAX_CC: usize = 10;

/// The state of one message in a send log: a recipient's in `email_send_log.status`, a
/// coach's in `coach_notice`, an owner's or admin's in `task_notice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// Claimed by an attempt that is sending (or died sending) the message.
    Sending,
    /// Accepted by the relay (or written to the outbox).
    Sent,
    /// Failed transiently; will be tried again.
    Deferred,
    /// Failed for good: rejected, unusable address, too many attempts, or interrupted.
    Failed,
    /// Not sent: the person has no address on file (coach notices).
    NoAddress,
}

/// Why a message claimed by an attempt that died before recording it is `failed`.
pub const INTERRUPTED: &str =
    "interrupted while sending; not sent again so that nobody gets it twice";

impl SendStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SendStatus::Sending => "sending",
            SendStatus::Sent => "sent",
            SendStatus::Deferred => "deferred",
            SendStatus::Failed => "failed",
            SendStatus::NoAddress => "no_address",
        }
    }
}

/// What each message says; the same for every recipient.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailContent {
    pub subject: String,
    /// Plain text.
    pub body: String,
    /// Addresses copied on every message.
    #[serde(default)]
    pub cc: Vec<String>,
}

impl EmailContent {
    /// Checks the content before anyone is emailed.
    pub fn validate(&self) -> Result<(), CaseloadError> {
        crate::error::first_problem(self.problems())
    }

    /// Everything wrong with the content, by field (`subject`, `body`, `cc`).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let subject_len = self.subject.trim().chars().count();
        if subject_len == 0 || subject_len > MAX_SUBJECT_LEN {
            problems.push((
                "subject",
                format!("a subject must have 1 to {MAX_SUBJECT_LEN} characters"),
            ));
        } else if self.subject.contains(['\r', '\n']) {
            problems.push(("subject", "a subject must fit on one line".into()));
        } else if let Some(problem) = control_character_problem(&self.subject, Lines::One) {
            problems.push(("subject", problem));
        }
        if self.body.trim().is_empty() || self.body.len() > MAX_BODY_LEN {
            problems.push((
                "body",
                format!("a body must have 1 to {MAX_BODY_LEN} bytes"),
            ));
        } else if let Some(problem) = control_character_problem(&self.body, Lines::Many) {
            problems.push(("body", problem));
        }
        if self.cc.len() > MAX_CC {
            problems.push(("cc", format!("at most {MAX_CC} cc addresses")));
        } else if let Some(problem) = self
            .cc
            .iter()
            .find_map(|cc| control_character_problem(cc, Lines::One))
        {
            problems.push(("cc", problem));
        } else if let Err(error) = self.cc_mailboxes() {
            problems.push(("cc", error.to_string()));
        }
        problems
    }

    fn cc_mailboxes(&self) -> Result<Vec<Mailbox>, CaseloadError> {
        self.cc
            .iter()
            .map(|cc| {
                cc.parse()
                    .map_err(|_| CaseloadError::Invalid(format!("{cc:?} is not an email address")))
            })
            .collect()
    }
}

/// Someone a message goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub person_id: Uuid,
    /// Shown in the To header.
    pub name: String,
    pub address: String,
}

/// What became of one send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    Sent,
    /// Worth trying again later (SMTP 4xx, connection or timeout errors, outbox I/O).
    Transient(String),
    /// Never worth trying again (SMTP 5xx, an address that is not one).
    Permanent(String),
    /// Not sent because the relay refuses this node whoever the recipient (bad credentials,
    /// an untrusted certificate): recorded as deferred, and the task fails until an admin
    /// fixes the settings and retries it.
    RelayRefused(String),
}

impl Delivery {
    /// The status a send log records for this outcome, and why if it was not sent.
    pub fn outcome(&self) -> (SendStatus, Option<&str>) {
        match self {
            Delivery::Sent => (SendStatus::Sent, None),
            Delivery::Transient(detail) | Delivery::RelayRefused(detail) => {
                (SendStatus::Deferred, Some(detail))
            }
            Delivery::Permanent(detail) => (SendStatus::Failed, Some(detail)),
        }
    }

    /// Why the relay refused us, if it did.
    pub fn relay_refusal(&self) -> Option<&str> {
        match self {
            Delivery::RelayRefused(detail) => Some(detail),
            _ => None,
        }
    }
}

/// Ends a run of concurrent sends at the relay's first refusal: the sends not yet begun are
/// not tried and carry the same refusal. A wrong password otherwise cost one failed AUTH per
/// message of the run, and relays lock an account (or block an address) after a burst of
/// them; now no more fail than were already on their way.
#[derive(Debug, Clone, Default)]
pub struct UntilRefused(Arc<OnceLock<String>>);

impl UntilRefused {
    /// Makes the send unless the relay has refused one of this run's; notes its refusal.
    pub async fn send(&self, send: impl Future<Output = Delivery>) -> Delivery {
        if let Some(detail) = self.0.get() {
            return Delivery::RelayRefused(detail.clone());
        }
        let delivery = send.await;
        if let Some(detail) = delivery.relay_refusal() {
            // The first refusal is the one kept; a later one says the same.
            let _ = self.0.set(detail.to_owned());
        }
        delivery
    }
}

/// The recipients a batch claimed, and what happened to the rest of its people.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    /// Newly claimed: send to these, then record the outcomes.
    pub recipients: Vec<Recipient>,
    /// Allowed people without an address on file (skipped).
    pub without_address: Vec<Uuid>,
    /// `changed` counts the claimed recipients; `unchanged` those without an address or
    /// claimed by an earlier run of this batch.
    pub report: BatchReport,
}

/// Claims the people of a batch as recipients of task `task_id` (step 1 of 3).
///
/// Inserts a `sending` log row per allowed person with an address, unless the task already
/// has a row for them, and returns exactly the newly claimed ones: a re-run of the batch
/// claims nobody twice.
pub async fn claim_recipients<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<Claim, CaseloadError> {
    let (targets, people) = load_targets(db, actor, person_ids).await?;
    let (with_address, without): (Vec<_>, Vec<_>) =
        people.into_iter().partition(|p| p.email.is_some());
    let claimed = store::email_log::claim(db, task_id, &with_address, now).await?;
    let recipients: Vec<Recipient> = with_address
        .into_iter()
        .filter(|p| claimed.contains(&p.id))
        .filter_map(recipient)
        .collect();
    Ok(Claim {
        report: BatchReport::for_targets(
            &targets,
            recipients.iter().map(|r| r.person_id).collect(),
        ),
        recipients,
        without_address: without.into_iter().map(|p| p.id).collect(),
    })
}

/// Hands out up to `limit` recipients of the task deferred before `deferred_before` again
/// (for a retry pass), marking them `sending` and counting the attempt.
///
/// A retry pass passes the time it started, so a recipient deferred again during the pass is
/// not handed out again by the same pass: each gets one try per pass, not a tight loop
/// against a relay that keeps saying "later".
pub async fn claim_deferred<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    deferred_before: DateTime<Utc>,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Recipient>, CaseloadError> {
    let ids = store::email_log::claim_deferred(db, task_id, deferred_before, limit, now).await?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // The address is the one claimed first, so a retry goes where the first try went.
    let addresses: HashMap<Uuid, String> = store::email_log::addresses(db, task_id, &ids)
        .await?
        .into_iter()
        .collect();
    Ok(people_by_ids(db, &ids)
        .await?
        .into_iter()
        .filter_map(|p| {
            let address = addresses.get(&p.id)?.clone();
            Some(Recipient {
                person_id: p.id,
                name: format!("{} {}", p.first_name, p.last_name),
                address,
            })
        })
        .collect())
}

/// Marks as failed the recipients an earlier attempt claimed but never recorded (it died
/// while sending). Call it once when an attempt starts, before claiming anything.
pub async fn fail_interrupted<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    let interrupted = store::email_log::sending_people(db, task_id).await?;
    crate::outcomes::record(db, task_id, PersonOutcome::Failed, &interrupted).await?;
    store::email_log::fail_interrupted(db, task_id, now).await
}

/// How many recipients of a batch ended in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub sent: u64,
    pub deferred: u64,
    pub failed: u64,
}

/// Records what became of the claimed recipients (step 3 of 3). A transient failure of a
/// recipient already tried [`MAX_SEND_ATTEMPTS`] times is recorded as failed.
pub async fn record_outcomes<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    deliveries: &[(Uuid, Delivery)],
    now: DateTime<Utc>,
) -> Result<Outcomes, CaseloadError> {
    let mut outcomes = Outcomes::default();
    let sent: Vec<Uuid> = deliveries
        .iter()
        .filter(|(_, d)| *d == Delivery::Sent)
        .map(|(id, _)| *id)
        .collect();
    if !sent.is_empty() {
        crate::outcomes::record(db, task_id, PersonOutcome::Changed, &sent).await?;
        outcomes.sent = store::email_log::record_sent(db, task_id, sent, now).await?;
    }
    let (mut deferred, mut failed) = (Vec::new(), Vec::new());
    // Failures are rare and each has its own detail: one UPDATE each.
    for (person_id, delivery) in deliveries {
        let (status, Some(detail)) = delivery.outcome() else {
            continue;
        };
        let changed =
            store::email_log::record_unsent(db, task_id, *person_id, (status, detail), now).await?;
        for row in changed {
            if row.status == SendStatus::Deferred.as_str() {
                deferred.push(row.person_id);
            } else {
                failed.push(row.person_id);
            }
        }
    }
    outcomes.deferred = deferred.len() as u64;
    outcomes.failed = failed.len() as u64;
    crate::outcomes::record(db, task_id, PersonOutcome::Deferred, &deferred).await?;
    crate::outcomes::record(db, task_id, PersonOutcome::Failed, &failed).await?;
    Ok(outcomes)
}

/// How many recipients of the task wait for another try.
pub async fn deferred_count<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
) -> Result<u64, CaseloadError> {
    store::email_log::deferred_count(db, task_id).await
}

fn recipient(person: person::Model) -> Option<Recipient> {
    Some(Recipient {
        person_id: person.id,
        name: format!("{} {}", person.first_name, person.last_name),
        address: person.email?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_tries_nothing_after_the_relays_refusal() {
        let run = UntilRefused::default();
        let tried = std::sync::atomic::AtomicUsize::new(0);
        let send = |delivery: Delivery| {
            let tried = &tried;
            async move {
                tried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                delivery
            }
        };
        assert_eq!(run.send(send(Delivery::Sent)).await, Delivery::Sent);
        let refused = Delivery::RelayRefused("535 bad credentials".into());
        assert_eq!(run.send(send(refused.clone())).await, refused);
        // Not tried: the same refusal, whatever this send would have said.
        assert_eq!(run.send(send(Delivery::Sent)).await, refused);
        assert_eq!(tried.load(std::sync::atomic::Ordering::Relaxed), 2);
        // Another run starts afresh.
        let next = UntilRefused::default();
        assert_eq!(next.send(send(Delivery::Sent)).await, Delivery::Sent);
    }
}
