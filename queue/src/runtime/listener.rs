//! PostgreSQL only: LISTENs for wake-ups (tasks enqueued or requeued by any node) and for
//! word of tasks other nodes changed, and relays them in-process: wake-ups at once, the
//! changes as events read from the tasks' rows, and only while this process has
//! subscribers.

use sea_orm::sqlx::postgres::PgListener;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::Store;
use crate::store::announce::{ChangedTasks, EVENT_CHANNEL, WAKE_CHANNEL};

/// Notifications whose tasks are read in one statement at most: what arrives while a read
/// runs goes into the next one, and ten notifications name about two thousand tasks.
const NOTIFICATIONS_PER_READ: usize = 10;

pub(crate) struct Listener {
    pub store: Store,
    pub stop: CancellationToken,
    /// Set once the first LISTEN is in place: from then on this node hears every change
    /// the others commit (see `Runtime::start`, which waits for it).
    pub listening: watch::Sender<bool>,
}

impl Listener {
    pub async fn run(self) {
        let (changed, to_read) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_events(self.store.clone(), to_read));
        super::reconnecting(&self.stop, "LISTEN", || self.listen(&changed)).await;
        drop(changed);
        let _ = reader.await;
    }

    /// Listens until stopped or the connection fails. Reading the changed tasks is left to
    /// [`read_events`], so a wake-up never waits behind a read.
    async fn listen(
        &self,
        changed: &mpsc::UnboundedSender<Vec<Uuid>>,
    ) -> Result<(), sea_orm::sqlx::Error> {
        let pool = self.store.db().get_postgres_connection_pool();
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen_all([WAKE_CHANNEL, EVENT_CHANNEL]).await?;
        self.listening.send_replace(true);
        // Anything enqueued while not listening was missed: look once.
        self.store.notify_committed();
        loop {
            let notification = tokio::select! {
                () = self.stop.cancelled() => return Ok(()),
                notification = listener.recv() => notification?,
            };
            if notification.channel() == WAKE_CHANNEL {
                self.store.notify_committed();
                continue;
            }
            match ChangedTasks::parse(notification.payload()) {
                Some(remote) if remote.origin != self.store.events().origin() => {
                    if self.store.events().has_subscribers() {
                        // The reader ends only after this loop does.
                        let _ = changed.send(remote.task_ids);
                    }
                }
                Some(_) => {}
                None => tracing::warn!(
                    payload = notification.payload(),
                    "unreadable task change notification"
                ),
            }
        }
    }
}

/// Publishes the events of the tasks other nodes changed, read from their rows, until the
/// listener is gone. A read that fails is logged and its tasks' events are lost to this
/// node's subscribers, as they would be while the LISTEN connection is down.
async fn read_events(store: Store, mut to_read: mpsc::UnboundedReceiver<Vec<Uuid>>) {
    let mut batches = Vec::new();
    while to_read
        .recv_many(&mut batches, NOTIFICATIONS_PER_READ)
        .await
        > 0
    {
        let mut ids: Vec<Uuid> = batches.drain(..).flatten().collect();
        // A task claimed and completed meanwhile is read once, as it is now.
        ids.sort_unstable();
        ids.dedup();
        match store.task_events(&ids).await {
            Ok(events) => store.events().publish_events(&events),
            Err(error) => tracing::warn!(%error, tasks = ids.len(), "reading changed tasks failed"),
        }
    }
}
