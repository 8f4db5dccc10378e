//! Admins' alerts by webhook: each event becomes a queue task (`bulkq.webhook`) enqueued in
//! the transaction that claimed the event, so it is sent once per event across the
//! cluster and retried with the queue's backoff while the receiver is down. The body is the
//! event as JSON; `X-Bulkq-Signature: sha256=<hex>` is its HMAC-SHA256 under the shared
//! secret, so the receiver can tell it came from us (ADR 0077).

use std::time::Duration;

use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http_body_util::Full;
use hyper::Request;
use hyper::http::{StatusCode, Uri, header};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use queue::{ComponentConfig, NewTask, TaskContext, TaskError, TaskExecutor};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use crate::CaseloadError;

/// The webhook task's component.
pub const WEBHOOK: &str = "bulkq.webhook";
/// The header carrying the body's signature.
pub const SIGNATURE_HEADER: &str = "x-bulkq-signature";
/// The header naming the event, so a receiver can drop one it has seen.
pub const EVENT_HEADER: &str = "x-bulkq-event";
/// How long the receiver has to answer one delivery.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// Deliveries tried before the task fails: with the backoff below, about a day.
const ATTEMPTS: i32 = 20;
/// The shortest secret accepted: a guessable key would let anyone forge an alert.
pub const MIN_SECRET_LEN: usize = 16;

/// Where alerts are posted and the key they are signed with.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    pub url: Uri,
    pub secret: String,
}

impl std::fmt::Debug for WebhookTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookTarget")
            .field("url", &self.url)
            .field("secret", &"…")
            .finish()
    }
}

impl WebhookTarget {
    /// `url` (http or https) and `secret`, or why not.
    pub fn new(url: &str, secret: &str) -> Result<Self, String> {
        let url: Uri = url
            .parse()
            .map_err(|error| format!("the webhook URL: {error}"))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err("the webhook URL must be http:// or https:// with a host".into());
        }
        if secret.chars().count() < MIN_SECRET_LEN {
            return Err(format!(
                "the webhook secret must have at least {MIN_SECRET_LEN} characters"
            ));
        }
        Ok(WebhookTarget {
            url,
            secret: secret.to_owned(),
        })
    }
}

/// One event as the receiver gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertEvent {
    /// Unique per event: the same event is never posted under two ids.
    pub id: String,
    /// `task_failed` or `queue_backlog`.
    pub kind: String,
    /// When it happened, RFC 3339.
    pub at: String,
    /// One line for a person.
    pub summary: String,
    /// The kind's particulars.
    pub detail: serde_json::Value,
}

/// The task that posts `event`, owned by nobody (a system task), unique by the event's id.
pub fn webhook_task(event: &AlertEvent) -> Result<NewTask, CaseloadError> {
    let spec = serde_json::to_value(event)
        .map_err(|error| CaseloadError::Invalid(format!("an alert event: {error}")))?;
    Ok(NewTask::new(WEBHOOK, spec, Uuid::nil())
        .with_created_by("bulkq")
        .with_unique_key(format!("webhook:{}", event.id))
        .with_max_attempts(ATTEMPTS))
}

/// `sha256=<hex>` of `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256={hex}")
}

/// Posts webhook tasks' events to the target.
pub struct WebhookExecutor {
    target: WebhookTarget,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl WebhookExecutor {
    pub fn new(target: WebhookTarget) -> Result<Self, CaseloadError> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(CaseloadError::Io)?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(WebhookExecutor {
            target,
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    /// How the queue treats webhook tasks: backoff from 5 s doubling to an hour.
    pub fn config() -> ComponentConfig {
        ComponentConfig {
            retry: queue::RetryPolicy {
                base_delay: Duration::from_secs(5),
                max_delay: Duration::from_secs(3600),
                ..queue::RetryPolicy::default()
            },
            timeout: ANSWER_WITHIN * 2,
            ..ComponentConfig::default()
        }
    }
}

#[async_trait::async_trait]
impl TaskExecutor for WebhookExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let event: AlertEvent = serde_json::from_value(ctx.spec().clone())
            .map_err(|error| TaskError::permanent(format!("not an alert event: {error}")))?;
        let body = Bytes::from(
            serde_json::to_vec(&event).map_err(|error| TaskError::permanent(error.to_string()))?,
        );
        let request = Request::post(self.target.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::USER_AGENT, "bulkq-webhook")
            .header(SIGNATURE_HEADER, signature(&self.target.secret, &body))
            .header(EVENT_HEADER, &event.id)
            .body(Full::new(body))
            .map_err(|error| TaskError::permanent(error.to_string()))?;
        let answer = tokio::time::timeout(ANSWER_WITHIN, self.client.request(request))
            .await
            .map_err(|_| TaskError::transient("the receiver did not answer in time"))?
            .map_err(|error| TaskError::transient(format!("posting the alert: {error}")))?;
        judge(answer.status())
    }
}

/// A 2xx is delivered; a receiver that is down, busy or failing is tried again; any other
/// answer says our request is wrong for it, and trying again would not change that.
fn judge(status: StatusCode) -> Result<(), TaskError> {
    match status {
        status if status.is_success() => Ok(()),
        StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS => Err(TaskError::transient(
            format!("the receiver answered {status}"),
        )),
        status if status.is_server_error() => Err(TaskError::transient(format!(
            "the receiver answered {status}"
        ))),
        status => Err(TaskError::permanent(format!(
            "the receiver refused the alert: {status}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_in_hex() {
        // RFC 4231, test case 2.
        let signature = signature("Jefe", b"what do ya want for nothing?");
        assert_eq!(
            signature,
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn targets_need_a_web_url_and_a_long_secret() {
        let secret = "0123456789abcdef";
        assert!(WebhookTarget::new("https://hooks.example.org/bulkq", secret).is_ok());
        assert!(WebhookTarget::new("ftp://example.org/", secret).is_err());
        assert!(WebhookTarget::new("not a url", secret).is_err());
        assert!(WebhookTarget::new("https://example.org/", "short").is_err());
        let debug = format!("{:?}", WebhookTarget::new("http://h/", secret).unwrap());
        assert!(!debug.contains(secret), "{debug}");
    }

    #[test]
    fn only_a_broken_or_busy_receiver_is_tried_again() {
        assert!(judge(StatusCode::NO_CONTENT).is_ok());
        for status in [StatusCode::BAD_GATEWAY, StatusCode::TOO_MANY_REQUESTS] {
            assert!(matches!(judge(status), Err(TaskError::Transient(_))));
        }
        assert!(matches!(
            judge(StatusCode::NOT_FOUND),
            Err(TaskError::Permanent(_))
        ));
    }
}
