//! The consuming side: a runtime service that wakes the local producer for every hint on
//! the durable queue, in the spirit of the PostgreSQL LISTEN relay.

use std::io;

use futures_util::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::{AmqpConfig, Backoff, Link, Outage, PROBE_INTERVAL, in_time, parse_hint};
use crate::store::Store;

/// How much of an unreadable message the warning shows.
const SHOWN_PAYLOAD: usize = 64;

pub(crate) struct HintConsumer {
    pub store: Store,
    pub config: AmqpConfig,
    /// The consumer tag (the node id), so the broker's consumer list says which node it is.
    pub tag: String,
    pub stop: CancellationToken,
}

impl HintConsumer {
    /// Consumes until `stop` fires, reconnecting with backoff whenever the connection fails.
    pub async fn run(self) {
        let mut backoff = Backoff::default();
        let mut outage = Outage::new("consumer");
        loop {
            let link = tokio::select! {
                () = self.stop.cancelled() => return,
                link = Link::open(&self.config, &self.tag) => link,
            };
            let result = match link {
                Ok(link) => {
                    let result = self.consume(&link, &mut backoff, &mut outage).await;
                    link.close().await;
                    result
                }
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => return,
                Err(error) => outage.failed(&error),
            }
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
    }

    /// Consumes on `link` until stopped (`Ok`) or the connection fails.
    async fn consume(
        &self,
        link: &Link,
        backoff: &mut Backoff,
        outage: &mut Outage,
    ) -> Result<(), lapin::Error> {
        let qos = link
            .channel
            .basic_qos(self.config.prefetch, BasicQosOptions::default());
        in_time("the prefetch setting", qos).await?;
        let consume = link.channel.basic_consume(
            self.config.queue.as_str().into(),
            self.tag.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        );
        let mut deliveries = in_time("the consume", consume).await?;
        outage.recovered();
        backoff.reset();
        // Hints published while this node was not consuming went to other nodes or were
        // dropped: look once.
        self.store.notify_committed();
        let mut probe = tokio::time::interval_at(Instant::now() + PROBE_INTERVAL, PROBE_INTERVAL);
        probe.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let delivery = tokio::select! {
                () = self.stop.cancelled() => return Ok(()),
                _ = probe.tick() => {
                    self.probe(link).await?;
                    continue;
                }
                delivery = deliveries.next() => delivery,
            };
            let Some(delivery) = delivery else {
                return Err(std::io::Error::other("the broker cancelled the consumer").into());
            };
            let delivery = delivery?;
            match parse_hint(&delivery.data) {
                Some(task) => {
                    tracing::trace!(%task, "wake-up hint");
                    self.store.notify_committed();
                }
                None => {
                    let shown = &delivery.data[..delivery.data.len().min(SHOWN_PAYLOAD)];
                    tracing::warn!(
                        queue = %self.config.queue,
                        payload = %String::from_utf8_lossy(shown),
                        "ignoring a message on the wake-up queue that is not a task id"
                    );
                }
            }
            // Acked after the wake: a hint whose ack is lost is redelivered, which costs one
            // claim that finds nothing.
            in_time("an ack", delivery.ack(BasicAckOptions::default())).await?;
        }
    }

    /// Asks the broker, on the consuming channel, how many consumers the queue has: no
    /// answer means the connection is dead, and none means the broker dropped this node's
    /// consumer without telling it. Either way the caller reconnects.
    async fn probe(&self, link: &Link) -> Result<(), lapin::Error> {
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let declare = link.channel.queue_declare(
            self.config.queue.as_str().into(),
            passive,
            FieldTable::default(),
        );
        let queue = in_time("the consumer's probe", declare).await?;
        if queue.consumer_count() == 0 {
            return Err(
                io::Error::other("the broker lists no consumer on the wake-up queue").into(),
            );
        }
        Ok(())
    }
}
