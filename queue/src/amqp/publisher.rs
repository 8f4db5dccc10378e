//! The publishing side: a handle the store keeps ([`HintPublisher`]) and the background
//! task that owns the connection.
//!
//! The handle only ever `try_send`s into a bounded channel, so a commit never waits for
//! RabbitMQ and never fails because of it. The task ends when every handle is gone (the
//! last clone of the store dropped).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;
use tokio::sync::mpsc::{self, error::TrySendError};
use uuid::Uuid;

use super::{AmqpConfig, Backoff, Link, Outage, hint_payload, in_time};
use crate::error::QueueError;

/// Hints waiting for the publisher. A bulk enqueue beyond this drops the rest of its hints:
/// they all say the same thing, and one wakes a node, which then claims batch after batch.
const HINT_BUFFER: usize = 1024;
/// AMQP delivery mode 2: the broker writes the message to disk, so hints published just
/// before a broker restart are still delivered after it.
const PERSISTENT: u8 = 2;

/// The store's handle on the background publisher. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct HintPublisher {
    ids: mpsc::Sender<Uuid>,
    /// Set once the publisher task was found gone, so that is logged once, not per commit.
    gone_reported: Arc<AtomicBool>,
}

impl HintPublisher {
    /// Checks `config` and starts the publisher task on the current tokio runtime. An
    /// unreachable broker is not an error: the task keeps trying.
    pub fn start(config: &AmqpConfig) -> Result<Self, QueueError> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            QueueError::Invalid("RabbitMQ wake-up hints need a tokio runtime".to_owned())
        })?;
        let (ids, receiver) = mpsc::channel(HINT_BUFFER);
        runtime.spawn(
            PublisherTask {
                config: config.clone(),
                ids: receiver,
            }
            .run(),
        );
        Ok(Self {
            ids,
            gone_reported: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Hands the ids of committed tasks to the publisher without waiting; what does not fit
    /// is dropped (a hint, not a task: the sweep still finds it).
    pub fn send(&self, tasks: impl IntoIterator<Item = Uuid>) {
        for task in tasks {
            match self.ids.try_send(task) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    tracing::debug!(
                        "wake-up hint buffer full; the rest of this commit's hints are dropped"
                    );
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    if !self.gone_reported.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            "the RabbitMQ hint publisher has stopped; new tasks wait for the sweep \
                             on other processes"
                        );
                    }
                    return;
                }
            }
        }
    }
}

/// The background task: publishes hints while connected, reconnects with backoff.
struct PublisherTask {
    config: AmqpConfig,
    ids: mpsc::Receiver<Uuid>,
}

impl PublisherTask {
    async fn run(mut self) {
        let mut backoff = Backoff::default();
        let mut outage = Outage::new("publisher");
        // The newest hint that could not be published during an outage: published first
        // thing after reconnecting, so consumers look once for everything the outage hid.
        let mut missed: Option<Uuid> = None;
        let mut dropped: u64 = 0;
        loop {
            match Link::open(&self.config, "bulkq hint publisher").await {
                Ok(link) => {
                    outage.recovered();
                    backoff.reset();
                    if dropped > 0 {
                        tracing::info!(
                            dropped,
                            "wake-up hints dropped while RabbitMQ was unreachable; one catch-up \
                             hint published"
                        );
                        dropped = 0;
                    }
                    let published = self.publish_until_failure(&link, missed.take()).await;
                    link.close().await;
                    match published {
                        // Every store is gone: nothing more to publish.
                        Ok(()) => return,
                        Err((error, unsent)) => {
                            missed = Some(unsent);
                            dropped += 1;
                            outage.failed(&error);
                        }
                    }
                }
                Err(error) => outage.failed(&error),
            }
            // Wait before the next attempt; hints arriving meanwhile are dropped, but the
            // newest is remembered.
            let pause = tokio::time::sleep(backoff.next_delay());
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    () = &mut pause => break,
                    task = self.ids.recv() => match task {
                        Some(task) => {
                            missed = Some(task);
                            dropped += 1;
                        }
                        None => return,
                    },
                }
            }
        }
    }

    /// Publishes `catch_up` (if any), then every hint that arrives, until the stores are gone
    /// (`Ok`) or publishing fails (the error and the hint that was not published).
    async fn publish_until_failure(
        &mut self,
        link: &Link,
        catch_up: Option<Uuid>,
    ) -> Result<(), (lapin::Error, Uuid)> {
        if let Some(task) = catch_up {
            self.publish(link, task)
                .await
                .map_err(|error| (error, task))?;
        }
        while let Some(task) = self.ids.recv().await {
            self.publish(link, task)
                .await
                .map_err(|error| (error, task))?;
        }
        Ok(())
    }

    /// One persistent message to the hint queue through the default exchange.
    async fn publish(&self, link: &Link, task: Uuid) -> Result<(), lapin::Error> {
        let properties = BasicProperties::default()
            .with_delivery_mode(PERSISTENT)
            .with_content_type("text/plain".into());
        let payload = hint_payload(task);
        let publish = link.channel.basic_publish(
            "".into(),
            self.config.queue.as_str().into(),
            BasicPublishOptions::default(),
            payload.as_bytes(),
            properties,
        );
        let confirm = in_time("a publish", publish).await?;
        // Publisher confirms are off, so this resolves at once: a hint lost in flight is
        // one the sweep catches, which is not worth a round trip per task.
        drop(confirm);
        Ok(())
    }
}
