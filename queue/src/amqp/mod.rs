//! RabbitMQ wake-up hints (feature `amqp`, off by default).
//!
//! A store configured with [`crate::Store::with_amqp_hints`] publishes the id of every task
//! it enqueues to a durable RabbitMQ queue once the enqueue has committed; a runtime whose
//! [`crate::RuntimeConfig::amqp`] is set consumes that queue and wakes its producer for each
//! message. That lets a process that shares no in-process signal with the runtime (another
//! process on the same SQLite file, a node of a cluster) start new work at once instead of
//! at the next sweep.
//!
//! ```text
//!   QueueTransaction::commit ─► HintPublisher (bounded channel, never waits)
//!                                   │ background task: one connection, persistent messages
//!                                   ▼
//!                      durable queue `bulkq.wake` (competing consumers)
//!                                   │ prefetch-limited, acked after the wake
//!                                   ▼
//!   Runtime: HintConsumer ─► store.notify_committed() ─► producer claims what is due
//! ```
//!
//! # Hints, not tasks
//! The database stays the master list. A message carries nothing the producer needs: it only
//! says "look now", and the producer claims whatever is due, with the usual guarded claim. So
//! a message that is lost (broker down, dropped because the channel was full, in flight when
//! the connection broke) only delays its task until the next sweep, and a duplicated or
//! redelivered one (at-least-once delivery, a consumer that died before its ack) costs one
//! claim that finds nothing. Whether RabbitMQ delivers a message at most once, at least once
//! or not at all never decides whether a task runs, or how often.
//!
//! Each message goes to one consumer (the queue is shared, not fanned out), so a hint wakes
//! one node: the node that will claim the task. Other nodes still find work by their sweep
//! and, on PostgreSQL, by LISTEN/NOTIFY.
//!
//! # Failure handling
//! Publishing never blocks or fails the caller's commit: ids go to the background publisher
//! over a bounded channel, and a full channel drops the rest of that commit's hints (one is
//! enough to wake a node). When the broker is unreachable, both sides log a warning once per
//! outage and reconnect with backoff ([`BACKOFF_FIRST`] doubling up to [`BACKOFF_MAX`]). The
//! publisher drops hints meanwhile but remembers the newest and publishes it when it is back,
//! so consumers look once for everything the outage hid; the consumer wakes its producer once
//! on every (re)connection for the same reason, as the PostgreSQL LISTEN relay does.
//!
//! A connection can also fail silently. Every call to the broker has a limit
//! ([`CALL_TIMEOUT`]), and the consumer asks the broker every [`PROBE_INTERVAL`] whether its
//! queue still has a consumer; no answer, or none listed, replaces the connection.

mod consumer;
mod publisher;

use std::io;
use std::time::Duration;

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::uri::{AMQPScheme, AMQPUri};
use lapin::{Channel, Connection, ConnectionProperties};
use uuid::Uuid;

use crate::error::QueueError;

pub(crate) use consumer::HintConsumer;
pub(crate) use publisher::HintPublisher;

/// Default [`AmqpConfig::queue`].
pub const QUEUE_DEFAULT: &str = "bulkq.wake";
/// Default [`AmqpConfig::prefetch`].
pub const PREFETCH_DEFAULT: u16 = 32;
/// The first pause before reconnecting after a failure; it doubles with every failure.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between reconnection attempts: how late, at most, hints resume after
/// the broker is back. An attempt against a broker that is down costs one refused TCP
/// connection, so there is little reason to wait longer.
pub const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long one exchange with the broker (opening a connection with its handshake and queue
/// declaration, a consume, an ack, a publish, the consumer's probe) may take before the
/// connection counts as dead and is replaced. Without it an unanswered SYN, or a connection
/// the broker has stopped serving, would hold the loop until the heartbeat gives up: twice
/// the negotiated 60 s.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a consuming node asks the broker whether its consumer is still on the queue.
/// A connection can stop delivering without failing: a socket left half open answers
/// nothing, and a consumer the broker dropped without a cancel leaves a healthy connection
/// that receives nothing. Once, in CI, a test queue listed no consumer for minutes after a
/// broker restart (the sweep ran its tasks late). The probe bounds such a silent loss to this
/// interval plus [`CALL_TIMEOUT`].
pub const PROBE_INTERVAL: Duration = Duration::from_secs(5);
/// How long a clean close may wait for the broker's answer.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// AMQP names (queues) are short strings of at most 255 bytes.
const NAME_MAX: usize = 255;

/// Where the wake-up hints go and how they are consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpConfig {
    /// The broker, `amqp://user:password@host:port/vhost` (the default vhost `/` is `%2f`).
    /// Plain AMQP only: this build has no TLS stack, so `amqps://` is refused. Give each
    /// installation its own vhost (or queue) when several share a broker.
    pub url: String,
    /// The durable queue the hints go through (declared by both sides on every connection).
    /// Default [`QUEUE_DEFAULT`].
    pub queue: String,
    /// Unacknowledged hints the broker may hand one consumer at a time. Default
    /// [`PREFETCH_DEFAULT`]: a hint is handled in microseconds, so a small window suffices,
    /// and a bounded one keeps a node that stops from holding many hints back from the others.
    pub prefetch: u16,
}

impl AmqpConfig {
    /// Hints through `url` with the default queue and prefetch.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            queue: QUEUE_DEFAULT.to_owned(),
            prefetch: PREFETCH_DEFAULT,
        }
    }

    /// Rejects settings that could never work (a malformed URL, `amqps://`, a queue name
    /// the broker refuses, no prefetch window); an unreachable broker is not checked here.
    pub fn validate(&self) -> Result<(), QueueError> {
        let invalid = |reason: String| Err(QueueError::Invalid(reason));
        let uri = match self.url.parse::<AMQPUri>() {
            Ok(uri) => uri,
            Err(error) => return invalid(format!("the RabbitMQ URL is not valid: {error}")),
        };
        if uri.scheme == AMQPScheme::AMQPS {
            return invalid(
                "amqps:// needs TLS, which this build leaves out; use amqp:// on a trusted \
                 network"
                    .to_owned(),
            );
        }
        if self.queue.is_empty() || self.queue.len() > NAME_MAX {
            return invalid(format!(
                "the RabbitMQ queue name must have 1 to {NAME_MAX} bytes"
            ));
        }
        if self.queue.starts_with("amq.") {
            return invalid("RabbitMQ reserves queue names starting with \"amq.\"".to_owned());
        }
        if self.prefetch == 0 {
            return invalid("the RabbitMQ prefetch must be at least 1".to_owned());
        }
        Ok(())
    }
}

/// The message body of a hint: the task id, hyphenated.
fn hint_payload(task: Uuid) -> String {
    task.hyphenated().to_string()
}

/// The task id a hint carries, if it carries one.
fn parse_hint(payload: &[u8]) -> Option<Uuid> {
    std::str::from_utf8(payload)
        .ok()
        .and_then(|text| Uuid::try_parse(text.trim()).ok())
}

/// One connection with one channel on which the hint queue has been declared.
struct Link {
    connection: Connection,
    channel: Channel,
}

impl Link {
    /// Connects (named `name` in the broker's connection list) and declares the durable
    /// queue; both sides declare it, so neither depends on the other having started first.
    async fn open(config: &AmqpConfig, name: &str) -> Result<Self, lapin::Error> {
        let open = async {
            let properties = ConnectionProperties::default().with_connection_name(name.into());
            let connection = Connection::connect(&config.url, properties).await?;
            let channel = connection.create_channel().await?;
            channel
                .queue_declare(
                    config.queue.as_str().into(),
                    QueueDeclareOptions::durable(),
                    FieldTable::default(),
                )
                .await?;
            Ok(Self {
                connection,
                channel,
            })
        };
        in_time("a new connection", open).await
    }

    /// Closes the connection cleanly (the broker requeues unacknowledged hints at once);
    /// a connection that is already gone has nothing to close.
    async fn close(self) {
        let close = self.connection.close(200, "OK".into());
        match tokio::time::timeout(CLOSE_TIMEOUT, close).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::debug!(%error, "closing the RabbitMQ connection"),
            Err(_) => tracing::debug!("closing the RabbitMQ connection timed out"),
        }
    }
}

/// `call`, failed with a timeout error naming `what` if it takes longer than
/// [`CALL_TIMEOUT`].
async fn in_time<T>(
    what: &str,
    call: impl Future<Output = Result<T, lapin::Error>>,
) -> Result<T, lapin::Error> {
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("RabbitMQ did not complete {what} within {CALL_TIMEOUT:?}"),
            )
            .into())
        })
}

/// The pause before each reconnection attempt: [`BACKOFF_FIRST`], doubling up to
/// [`BACKOFF_MAX`], back to the start once a connection works.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: BACKOFF_FIRST,
        }
    }
}

impl Backoff {
    fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        delay
    }

    fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }
}

/// Logs an outage once: a warning at its first failure, the retries at debug level, and a
/// note when the broker is reachable again. A broker that is down for an hour must not
/// write a warning every two seconds.
#[derive(Debug)]
struct Outage {
    /// `publisher` or `consumer`, for the log.
    role: &'static str,
    /// Failed attempts since the last working connection; zero while connected.
    failures: u32,
}

impl Outage {
    fn new(role: &'static str) -> Self {
        Self { role, failures: 0 }
    }

    fn failed(&mut self, error: &lapin::Error) {
        self.failures += 1;
        if self.failures == 1 {
            tracing::warn!(
                role = self.role,
                %error,
                "RabbitMQ is unreachable; wake-up hints are dropped until it is back \
                 (the sweep still finds every task)"
            );
        } else {
            tracing::debug!(role = self.role, %error, attempt = self.failures, "RabbitMQ still unreachable");
        }
    }

    /// A connection works (again).
    fn recovered(&mut self) {
        if self.failures > 0 {
            tracing::info!(
                role = self.role,
                failed_attempts = self.failures,
                "RabbitMQ is reachable again"
            );
        }
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_carry_the_task_id_and_anything_else_is_no_hint() {
        let task = Uuid::now_v7();
        assert_eq!(parse_hint(hint_payload(task).as_bytes()), Some(task));
        assert_eq!(parse_hint(format!(" {task}\n").as_bytes()), Some(task));
        assert_eq!(parse_hint(task.simple().to_string().as_bytes()), Some(task));
        for garbage in [&b""[..], b"hello", b"\xff\xfe", b"1234", &[b'a'; 300][..]] {
            assert_eq!(parse_hint(garbage), None);
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_starts_over_after_a_success() {
        let mut backoff = Backoff::default();
        let delays: Vec<u64> = (0..7)
            .map(|_| backoff.next_delay().as_millis() as u64)
            .collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
        backoff.reset();
        assert_eq!(backoff.next_delay(), BACKOFF_FIRST);
    }

    #[test]
    fn the_configuration_is_checked() {
        let good = AmqpConfig::new("amqp://guest:guest@127.0.0.1:5672/%2f");
        assert_eq!(good.queue, "bulkq.wake");
        assert_eq!(good.prefetch, 32);
        good.validate().unwrap();
        AmqpConfig::new("amqp://rabbit.internal")
            .validate()
            .unwrap();

        for url in [
            "nowhere",
            "http://127.0.0.1:5672",
            "amqps://127.0.0.1:5671/%2f",
        ] {
            assert!(AmqpConfig::new(url).validate().is_err(), "{url}");
        }
        for queue in ["", "amq.wake", &"q".repeat(256)] {
            let config = AmqpConfig {
                queue: queue.to_owned(),
                ..good.clone()
            };
            assert!(config.validate().is_err(), "{queue:?}");
        }
        let config = AmqpConfig {
            prefetch: 0,
            ..good.clone()
        };
        assert!(config.validate().is_err());
    }
}
