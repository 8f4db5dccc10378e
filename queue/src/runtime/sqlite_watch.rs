//! SQLite only: wakes the producer when another process commits to the database file (a
//! second `bulkq` process enqueuing, an administrator's command line).
//!
//! SQLite has no notification channel between processes; without this a task committed
//! elsewhere waits for the producer's sweep (a second by default). `PRAGMA data_version`
//! answers a different number whenever any other connection has committed since the
//! connection last asked, and in WAL mode answering costs a look at the shared-memory
//! index, no file read. So a connection of its own asks every `poll_interval` (a
//! millisecond by default), and a change wakes the producer, which then claims.
//!
//! Commits of this process's own pool change the number too. Such a wake-up is harmless: a
//! producer with nothing to claim runs an UPDATE that matches no row and writes nothing.

use std::time::Duration;

use sea_orm::sqlx::sqlite::SqliteConnection;
use sea_orm::sqlx::{self, Connection};
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::store::Store;

pub(crate) struct SqliteWatch {
    pub store: Store,
    pub poll_interval: Duration,
    pub stop: CancellationToken,
}

impl SqliteWatch {
    pub async fn run(self) {
        super::reconnecting(&self.stop, "SQLite commit watch", || self.watch()).await;
    }

    /// Polls until stopped or the connection fails.
    async fn watch(&self) -> Result<(), sqlx::Error> {
        let options = self
            .store
            .db()
            .get_sqlite_connection_pool()
            .connect_options();
        let mut connection = SqliteConnection::connect_with(&options).await?;
        // Whatever was committed while not watching was missed: look once.
        self.store.notify_committed();
        let mut seen = data_version(&mut connection).await?;
        let mut ticks = tokio::time::interval(self.poll_interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.stop.cancelled() => break,
                _ = ticks.tick() => {}
            }
            let version = data_version(&mut connection).await?;
            if version != seen {
                seen = version;
                self.store.notify_committed();
            }
        }
        connection.close().await
    }
}

async fn data_version(connection: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(connection)
        .await
}
