//! `caseload.email`: one message per targeted person with an address, each person at most
//! once per task across crashes and retries (see [`crate::email`] for the three steps).
//!
//! An attempt first fails the sends a dead attempt left unrecorded, then gives every
//! recipient deferred by earlier attempts one more try, then walks the rest of the target.
//! While one batch's messages go out, the next batch is claimed: the relay and the database
//! work at once, and at most two batches are ever claimed and not yet recorded.
//! If recipients are still deferred at the end, the attempt ends with a transient error, so
//! the queue tries again after its backoff, which is the pause a relay saying "later" needs.

use std::sync::{Arc, Mutex};

use bulkq_types::actions::ActionKind;
use bulkq_types::outcomes::PersonOutcome;
use bulkq_types::requests::{EmailRequest, ScheduleRequest};
use bulkq_types::words::quoted;
use chrono::Utc;
use futures_util::{StreamExt, stream};
use queue::{TaskContext, TaskError, TaskExecutor};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{BulkAction, NodeLimits};
use crate::actions::ActionsConfig;
use crate::actions::pace::SharedPace;
use crate::actions::spec::{RequestChecks, SubmitError, everyone};
use crate::actions::summary::StatusNames;
use crate::actions::target::Target;
use crate::actions::walk::{BatchAction, Progress, Reach, Step, Walk, read_spec, task_error};
use crate::email::{
    Claim, Delivery, EmailContent, Mailer, Recipient, UntilRefused, claim_deferred,
    claim_recipients, deferred_count, fail_interrupted, record_outcomes,
};
use crate::outcomes;
use crate::users::StaffUser;

/// Messages in flight at once, each over a connection of its own to the relay: one at a
/// time, the relay's round trips would bound throughput.
pub const EMAIL_SENDS_IN_FLIGHT: usize = 8;

/// People per email batch, whatever the configured batch size: a batch is claimed before it
/// is sent, and the next is claimed while it is sent, so a crash mid-send costs at most
/// twice this many recipients their message (they are marked failed rather than risk
/// sending twice).
pub const EMAIL_BATCH_MAX: u64 = 100;

pub(crate) struct Email;

/// What a `caseload.email` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailSpec {
    pub target: Target,
    pub content: EmailContent,
}

impl BulkAction for Email {
    const KIND: ActionKind = ActionKind::Email;
    type Request = EmailRequest;
    type Spec = EmailSpec;

    async fn check<C: ConnectionTrait>(
        _db: &C,
        user: &StaffUser,
        request: EmailRequest,
        _limits: &NodeLimits,
    ) -> Result<(EmailSpec, ScheduleRequest), SubmitError> {
        let mut checks = RequestChecks::new(&request.unknown, user);
        let schedule = checks.schedule(request.schedule);
        let target = checks.target(request.target, everyone());
        let content = EmailContent {
            subject: request.subject,
            body: request.body,
            cc: request.cc,
        };
        checks.add(content.problems());
        let spec = EmailSpec {
            target: checks.finish(target)?,
            content,
        };
        Ok((spec, schedule))
    }

    fn target(spec: &EmailSpec) -> &Target {
        &spec.target
    }

    fn summary(spec: &EmailSpec, people: &str, _: &StatusNames) -> String {
        format!("Email {people}: {}", quoted(&spec.content.subject))
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        EmailExecutor {
            mailer: config.mailer.clone(),
            pace: pace(config.batch_size.min(EMAIL_BATCH_MAX)),
        }
    }
}

pub(crate) struct EmailExecutor {
    pub mailer: Mailer,
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for EmailExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: EmailSpec = read_spec(ctx)?;
        let attempt_started = Utc::now();
        let batch_size = self.pace.max_rows();
        let mut walk: Walk<()> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        let task_id = ctx.task_id();

        let txn = ctx.begin_batch().await?;
        let interrupted = fail_interrupted(&*txn, task_id, attempt_started)
            .await
            .map_err(task_error)?;
        walk.progress.report.failed += interrupted;
        walk.commit(ctx, txn).await?;

        let content = Arc::new(spec.content);
        loop {
            let txn = ctx.begin_batch().await?;
            let retry = claim_deferred(&*txn, task_id, attempt_started, batch_size, Utc::now())
                .await
                .map_err(task_error)?;
            if retry.is_empty() {
                break;
            }
            let report = &mut walk.progress.report;
            report.deferred = report.deferred.saturating_sub(retry.len() as u64);
            walk.commit(ctx, txn).await?;
            let sends = self.start_sending(retry, &content, ctx);
            let deliveries = sends.delivered().await;
            self.record(ctx, &mut walk, &deliveries).await?;
        }

        let batches = EmailBatches {
            executor: self,
            content: &content,
            in_flight: Mutex::new(None),
        };
        let walked = walk.run(ctx, &batches).await;
        // The last batch's messages, or those in flight when the walk failed, are recorded
        // whatever happened, against the last checkpoint committed.
        if let Some(sends) = batches.take_in_flight() {
            if walked.is_err() {
                walk.rewind(ctx)?;
            }
            let deliveries = sends.delivered().await;
            self.record(ctx, &mut walk, &deliveries).await?;
        }
        walked?;

        let txn = ctx.begin_batch().await?;
        let deferred = deferred_count(&*txn, task_id).await.map_err(task_error)?;
        drop(txn);
        if deferred > 0 {
            return Err(TaskError::transient(format!(
                "{deferred} recipients deferred by the mail relay; trying them again later"
            )));
        }
        Ok(())
    }
}

impl EmailExecutor {
    /// Starts sending to each recipient, outside any transaction and beside whatever the
    /// task does next; a send begun after the task is told to stop is not made.
    fn start_sending(
        &self,
        recipients: Vec<Recipient>,
        content: &Arc<EmailContent>,
        ctx: &TaskContext,
    ) -> Sends {
        let (mailer, content) = (self.mailer.clone(), content.clone());
        let token = ctx.cancellation().clone();
        Sends(tokio::spawn(async move {
            let run = UntilRefused::default();
            let sends: Vec<_> = recipients
                .iter()
                .map(|recipient| deliver(&mailer, recipient, &content, &token, &run))
                .collect();
            stream::iter(sends)
                .buffer_unordered(EMAIL_SENDS_IN_FLIGHT)
                .collect()
                .await
        }))
    }

    /// Records what became of a batch's sends, with the walk's progress, in a closing batch
    /// (so that neither the sent nor the unsent are lost once the task is told to stop). A
    /// relay that refused us fails the task; a stop ends it once recorded.
    async fn record(
        &self,
        ctx: &mut TaskContext,
        walk: &mut Walk<()>,
        deliveries: &[(Uuid, Delivery)],
    ) -> Result<(), TaskError> {
        let stopped = ctx.cancellation().is_cancelled();
        let refused = deliveries
            .iter()
            .find_map(|(_, delivery)| delivery.relay_refusal())
            .map(str::to_owned);
        let txn = ctx.begin_closing_batch().await?;
        let outcomes = record_outcomes(&*txn, ctx.task_id(), deliveries, Utc::now())
            .await
            .map_err(task_error)?;
        let report = &mut walk.progress.report;
        report.changed += outcomes.sent;
        report.deferred += outcomes.deferred;
        report.failed += outcomes.failed;
        walk.commit(ctx, txn).await?;
        if let Some(detail) = refused {
            return Err(TaskError::Permanent(detail));
        }
        if stopped {
            return Err(TaskError::Cancelled);
        }
        Ok(())
    }
}

/// A batch's messages on their way, sent by a task of their own; dropped, it stops sending.
struct Sends(tokio::task::JoinHandle<Vec<(Uuid, Delivery)>>);

impl Sends {
    /// What became of each send. A send task that panicked leaves its recipients unrecorded,
    /// `sending`, so the next attempt fails them rather than risk sending twice.
    async fn delivered(mut self) -> Vec<(Uuid, Delivery)> {
        (&mut self.0).await.unwrap_or_default()
    }
}

impl Drop for Sends {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Claims each batch's recipients in its transaction; once it has committed, records the
/// previous batch's sends and starts this one's.
struct EmailBatches<'a> {
    executor: &'a EmailExecutor,
    content: &'a Arc<EmailContent>,
    /// The sends of the batch committed last, not yet recorded.
    in_flight: Mutex<Option<Sends>>,
}

impl EmailBatches<'_> {
    fn take_in_flight(&self) -> Option<Sends> {
        self.in_flight.lock().expect("the sends' lock").take()
    }
}

#[async_trait::async_trait]
impl BatchAction<()> for EmailBatches<'_> {
    type Done = Claim;
    /// Never: a batch's claim waits for the previous one's commit, and its sends for its own.
    const OVERLAPS: bool = false;

    /// Claims the batch's recipients and records the outcomes of everyone not claimed;
    /// the recipients' own come once their messages are sent (or found interrupted). People
    /// claimed by an earlier run keep the outcome that run recorded.
    async fn work(&self, step: &Step) -> Result<Claim, TaskError> {
        let txn = &*step.txn;
        let claim = claim_recipients(txn, step.task_id, &step.actor, &step.batch.ids, Utc::now())
            .await
            .map_err(task_error)?;
        for (outcome, people) in [
            (PersonOutcome::NoEmailAddress, &claim.without_address),
            (PersonOutcome::OutOfScope, &claim.report.forbidden),
            (PersonOutcome::Unknown, &claim.report.unknown),
        ] {
            outcomes::record(txn, step.task_id, outcome, people)
                .await
                .map_err(task_error)?;
        }
        Ok(claim)
    }

    fn record(
        &self,
        _step: &Step,
        claim: &Claim,
        progress: &mut Progress<()>,
    ) -> Result<(), TaskError> {
        let without_address = claim.without_address.len() as u64;
        let report = &mut progress.report;
        report.add_skipped(&claim.report.forbidden, &claim.report.unknown);
        // `unchanged` of a claim also counts those without an address.
        report.unchanged += (claim.report.unchanged.len() as u64).saturating_sub(without_address);
        report.without_address += without_address;
        Ok(())
    }

    /// Records the previous batch's sends, then starts this batch's. If the relay refused
    /// the previous batch, this one's recipients are recorded as deferred, never sent.
    async fn after_commit(
        &self,
        ctx: &mut TaskContext,
        walk: &mut Walk<()>,
        claim: Claim,
    ) -> Result<(), TaskError> {
        if let Some(sends) = self.take_in_flight() {
            let deliveries = sends.delivered().await;
            if let Err(error) = self.executor.record(ctx, walk, &deliveries).await {
                let why = match &error {
                    TaskError::Permanent(refusal) => Delivery::RelayRefused(refusal.clone()),
                    _ => Delivery::Transient(NOT_SENT.into()),
                };
                let not_sent: Vec<(Uuid, Delivery)> = claim
                    .recipients
                    .iter()
                    .map(|r| (r.person_id, why.clone()))
                    .collect();
                self.executor.record(ctx, walk, &not_sent).await?;
                return Err(error);
            }
        }
        let sends = self
            .executor
            .start_sending(claim.recipients, self.content, ctx);
        *self.in_flight.lock().expect("the sends' lock") = Some(sends);
        Ok(())
    }
}

/// Why a claimed recipient was not sent to: the task was told to stop first.
const NOT_SENT: &str = "not sent yet: the task was stopped";

/// Sends one message, unless the task has been told to stop (then it is not sent, and so
/// safe to send later) or the relay refused an earlier send of the batch.
async fn deliver(
    mailer: &Mailer,
    recipient: &Recipient,
    content: &EmailContent,
    token: &CancellationToken,
    run: &UntilRefused,
) -> (Uuid, Delivery) {
    let delivery = if token.is_cancelled() {
        Delivery::Transient(NOT_SENT.into())
    } else {
        run.send(mailer.send(recipient, content)).await
    };
    (recipient.person_id, delivery)
}
