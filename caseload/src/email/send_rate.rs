//! `--smtp-rate`: at most so many messages a second through the mail relay, whichever node
//! sends them. The allowance is a token bucket in the database (`send_rate`), topped up at
//! the rate and holding a second's worth; a node draws an eighth of a second's tokens at a
//! time and hands them to its sends one by one, so the bucket costs a write per eighth of a
//! second, not one per message. Tokens a node drew and did not use when it stops are lost:
//! the cluster sends slower, never faster, than the rate.

use std::time::Duration;

use crate::CaseloadError;
use crate::store::send_rate;

/// The bucket of the relay's rate.
const SMTP: &str = "smtp";

/// A cluster-wide send rate, shared by the mailer's clones on one node.
#[derive(Debug)]
pub struct SendRate {
    store: queue::Store,
    per_second: f64,
    /// Tokens this node has drawn and not yet used.
    on_hand: tokio::sync::Mutex<f64>,
}

impl SendRate {
    pub fn new(store: queue::Store, per_second: u32) -> Self {
        SendRate {
            store,
            per_second: f64::from(per_second.max(1)),
            on_hand: tokio::sync::Mutex::new(0.0),
        }
    }

    /// Waits until one message may go.
    pub async fn acquire(&self) -> Result<(), CaseloadError> {
        let mut on_hand = self.on_hand.lock().await;
        loop {
            if *on_hand >= 1.0 {
                *on_hand -= 1.0;
                return Ok(());
            }
            let draw = (self.per_second / 8.0).ceil();
            let capacity = self.per_second.max(draw);
            let txn = self.store.begin_write().await?;
            let now = self.store.clock().now();
            let (taken, left) =
                send_rate::take(&*txn, SMTP, (self.per_second, capacity), draw, now).await?;
            txn.commit().await?;
            *on_hand += taken;
            if taken < 1.0 {
                let wait = ((1.0 - left) / self.per_second).max(0.001);
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            }
        }
    }
}
