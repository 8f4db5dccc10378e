//! PostgreSQL only: LISTENs for wake-ups (tasks enqueued or requeued by any node) and for
//! task events published by other nodes, and relays them in-process.

use sea_orm::sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::store::Store;
use crate::store::announce::{EVENT_CHANNEL, RemoteEvents, WAKE_CHANNEL};

pub(crate) struct Listener {
    pub store: Store,
    pub stop: CancellationToken,
}

impl Listener {
    pub async fn run(self) {
        super::reconnecting(&self.stop, "LISTEN", || self.listen()).await;
    }

    /// Listens until stopped or the connection fails.
    async fn listen(&self) -> Result<(), sea_orm::sqlx::Error> {
        let pool = self.store.db().get_postgres_connection_pool();
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen_all([WAKE_CHANNEL, EVENT_CHANNEL]).await?;
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
            match serde_json::from_str::<RemoteEvents>(notification.payload()) {
                Ok(remote) if remote.origin != self.store.origin() => {
                    self.store.publish_events(&remote.events);
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "unreadable task event notification"),
            }
        }
    }
}
