//! The backlog alert: when the oldest due task has waited longer than `--alert-wait-over`,
//! admins who asked for alerts are emailed and the webhook is posted, once per episode; the
//! episode ends when the wait falls under half the threshold, so a queue hovering at the
//! threshold does not alert on every look.

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::WriteClass;
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};

use super::webhook::{AlertEvent, webhook_task};
use super::{AlertSettings, email_admins};
use crate::CaseloadError;
use crate::email::{EmailContent, Mailer};
use crate::store::admin_alerts;

/// The job's name in the scheduler.
pub const QUEUE_ALERTS_JOB: &str = "caseload.queue_alerts";
/// The alert's key and its events' kind.
pub const BACKLOG: &str = "queue_backlog";
/// How often the job looks.
const LOOK_EVERY: Duration = Duration::from_secs(30);

/// The job, run on one node at a time.
pub fn queue_alert_job(mailer: Mailer, settings: AlertSettings) -> PeriodicJob {
    let every = LOOK_EVERY
        .min(settings.wait_over / 2)
        .max(Duration::from_secs(1));
    PeriodicJob::new(
        QUEUE_ALERTS_JOB,
        Schedule::Every(every),
        QueueAlerts { mailer, settings },
    )
    .with_lock_at_least_half_of(every)
}

struct QueueAlerts {
    mailer: Mailer,
    settings: AlertSettings,
}

#[async_trait::async_trait]
impl PeriodicTask for QueueAlerts {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        check_backlog(&ctx.store, &self.mailer, &self.settings)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// What one look did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BacklogLook {
    /// An episode began: admins were told.
    Raised,
    /// The episode that was on has ended.
    Cleared,
    /// Nothing changed.
    Unchanged,
}

/// Looks at the backlog once: raises the alert (telling admins) or clears it.
pub async fn check_backlog(
    store: &queue::Store,
    mailer: &Mailer,
    settings: &AlertSettings,
) -> Result<BacklogLook, CaseloadError> {
    let now = store.clock().now();
    let waited = store
        .task_oldest_due(now)
        .await?
        .map(|due| (now - due).to_std().unwrap_or_default());
    let over = waited.is_some_and(|waited| waited > settings.wait_over);
    let under_half = waited.is_none_or(|waited| waited < settings.wait_over / 2);
    let mut txn = store.begin_queue_as(WriteClass::Background).await?;
    if over {
        let waited = waited.unwrap_or_default();
        if !admin_alerts::raise(&*txn, BACKLOG, now).await? {
            return Ok(BacklogLook::Unchanged);
        }
        if settings.webhook.is_some() {
            txn.enqueue_once(webhook_task(&event(now, waited, settings.wait_over))?)
                .await?;
        }
        txn.commit().await?;
        email_admins(store, mailer, &message(waited, settings.wait_over)).await?;
        tracing::warn!(
            waited_seconds = waited.as_secs(),
            "the oldest due task has waited too long: admins alerted"
        );
        return Ok(BacklogLook::Raised);
    }
    if under_half && admin_alerts::clear(&*txn, BACKLOG, now).await? {
        txn.commit().await?;
        return Ok(BacklogLook::Cleared);
    }
    Ok(BacklogLook::Unchanged)
}

/// The webhook's event for an episode raised at `at`.
fn event(at: DateTime<Utc>, waited: Duration, wait_over: Duration) -> AlertEvent {
    AlertEvent {
        id: format!("{BACKLOG}:{}", at.timestamp_micros()),
        kind: BACKLOG.to_owned(),
        at: at.to_rfc3339(),
        summary: format!(
            "The oldest due task has waited {} to start (alert after {}).",
            minutes(waited),
            minutes(wait_over)
        ),
        detail: serde_json::json!({
            "waited_seconds": waited.as_secs(),
            "threshold_seconds": wait_over.as_secs(),
        }),
    }
}

fn message(waited: Duration, wait_over: Duration) -> EmailContent {
    EmailContent {
        subject: format!("bulkq: tasks have waited {} to start", minutes(waited)),
        body: format!(
            "The oldest due task in bulkq has waited {} to start; you are alerted after {}.\n\n\
             Queue health shows the nodes, paused actions and what is running.\n",
            minutes(waited),
            minutes(wait_over)
        ),
        cc: Vec::new(),
    }
}

/// "12 min", or "40 s" under a minute.
fn minutes(length: Duration) -> String {
    match length.as_secs() {
        secs if secs < 60 => format!("{secs} s"),
        secs => format!("{} min", secs / 60),
    }
}
