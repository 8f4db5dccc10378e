//! Admins told when something needs them: a task that fails or is parked (by email through
//! [`crate::task_notices`], and by webhook), and a queue whose oldest due task has waited
//! too long ([`backlog`]). Each event is claimed once across the cluster before anyone is
//! told; webhook deliveries are queue tasks ([`webhook`]), retried with backoff.

pub mod backlog;
pub mod webhook;

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::Task;

use crate::CaseloadError;
use crate::email::{EmailContent, Mailer};
use crate::store::users;
use webhook::{AlertEvent, WEBHOOK, WebhookTarget};

/// Default `--alert-wait-over`: a due task waiting this long means the queue is stuck or
/// far behind.
pub const WAIT_OVER_DEFAULT: Duration = Duration::from_secs(15 * 60);

/// How admins are alerted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertSettings {
    /// The oldest due task's wait that raises the backlog alert.
    pub wait_over: Duration,
    /// Where events are posted, if anywhere.
    pub webhook: Option<WebhookTarget>,
}

impl Default for AlertSettings {
    fn default() -> Self {
        AlertSettings {
            wait_over: WAIT_OVER_DEFAULT,
            webhook: None,
        }
    }
}

/// The webhook event of `task`'s failure that ended at `ended_at`, owned by `owner`; `None`
/// for a webhook task's own failure (posting that would only fail the same way).
pub fn failure_event(task: &Task, ended_at: DateTime<Utc>, owner: &str) -> Option<AlertEvent> {
    if task.execution_component_name == WEBHOOK {
        return None;
    }
    Some(AlertEvent {
        id: format!("task_failed:{}:{}", task.id, ended_at.timestamp_micros()),
        kind: "task_failed".to_owned(),
        at: ended_at.to_rfc3339(),
        summary: format!(
            "A task of {owner} ended {}: {}",
            task.workflow_status.as_str(),
            task.execution_component_name
        ),
        detail: serde_json::json!({
            "task_id": task.id,
            "action": task.execution_component_name,
            "status": task.workflow_status.as_str(),
            "owner": owner,
            "attempt": task.attempt,
            "error": task.workflow_status_desc.as_deref().and_then(|e| e.lines().next()),
        }),
    })
}

/// Emails `content` to every admin who asked for alerts and gave an address; at most once
/// (a message the relay defers is logged, not retried: the dashboard shows the state).
pub async fn email_admins(
    store: &queue::Store,
    mailer: &Mailer,
    content: &EmailContent,
) -> Result<u64, CaseloadError> {
    let admins = users::alerted_admins(store.db()).await?;
    let mut sent = 0;
    for admin in admins {
        let Some(address) = admin.email.filter(|a| !a.trim().is_empty()) else {
            continue;
        };
        let delivery = mailer.send_to(&admin.display_name, &address, content).await;
        if delivery == crate::email::Delivery::Sent {
            sent += 1;
        } else {
            tracing::warn!(admin = %admin.username, ?delivery, "an admin alert was not delivered");
        }
    }
    Ok(sent)
}
