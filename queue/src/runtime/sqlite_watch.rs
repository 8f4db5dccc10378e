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
//! Where the operating system reports file writes (see [`wal_writes`]), a write to the WAL
//! file also makes the watch ask at once, and again and again until the commit that wrote
//! it shows (it shows after the writer's sync, a fraction of a millisecond later) or for
//! [`WRITE_FOLLOW_WINDOW`] at most. That takes a commit from another process to the
//! producer in tens of microseconds instead of up to a timer tick, and costs nothing while
//! no one writes. It does so only after [`QUIET_BEFORE_FOLLOWING`] without a commit: on a
//! busy database the number changes at nearly every tick anyway, its producer is awake,
//! and following every write of a drain cost a tenth of its throughput in asking.
//!
//! Nor does it follow while this process's own write transaction is open: it waits for
//! that transaction to end ([`Store::own_writes_ended`]) and then follows, reading no cue
//! meanwhile, so the kernel folds the transaction's writes into one pending cue. SQLite
//! allows no other writer while ours holds the lock, and a bulk action's batch writes the
//! WAL for hundreds of milliseconds before it commits: following each of those writes kept
//! the watch asking back to back through every batch, mostly in the kernel (ADR 0011 has
//! the figures). A commit another process makes while ours waits for the lock is seen
//! when ours ends, by the follow after the wait; skipping such cues instead of deferring
//! them lost that commit until the next tick.
//!
//! Where those cues exist the timer is only the safety net for a skipped or missed cue, so
//! once the database has gone [`IDLE_AFTER`] without a commit it ticks every
//! [`IDLE_POLL_INTERVAL`] instead: an idle node asking a thousand times a second cost 8 %
//! of a core in release (17 % in debug), for nothing. The first cue after the quiet is followed at once, so a
//! commit from elsewhere starts its task as promptly as before, and the next commit seen
//! brings the fast ticks back.
//!
//! Commits of this process's own pool change the number too. Such a wake-up is harmless: a
//! producer with nothing to claim runs an UPDATE that matches no row and writes nothing.

use std::time::Duration;

use sea_orm::sqlx::sqlite::SqliteConnection;
use sea_orm::sqlx::{self, Connection};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::wal_writes::{WalWrites, wal_writes};
use crate::store::Store;

/// How long the watch keeps asking after a write to the WAL file before it leaves the
/// commit to the next timer tick: well above a commit's sync here (about a millisecond),
/// and short enough that a write which never commits (a rolled-back transaction that
/// spilled pages) costs little.
const WRITE_FOLLOW_WINDOW: Duration = Duration::from_millis(5);

/// How long the database must have gone without a commit for a write to be followed.
const QUIET_BEFORE_FOLLOWING: Duration = Duration::from_millis(5);

/// How long the database must have gone without a commit for the watch to tick slowly
/// (where write cues exist). A cue is skipped only within [`QUIET_BEFORE_FOLLOWING`] of a
/// commit, so fast ticks for twenty times that catch every commit a skipped cue announced;
/// longer would keep an idle node asking fast for its own heartbeat's every commit.
const IDLE_AFTER: Duration = Duration::from_millis(100);

/// The tick of an idle watch with write cues: a cue missed (none should be) waits this
/// long, still well inside the producer's sweep.
const IDLE_POLL_INTERVAL: Duration = Duration::from_millis(100);

pub(crate) struct SqliteWatch {
    pub store: Store,
    pub poll_interval: Duration,
    pub stop: CancellationToken,
}

impl SqliteWatch {
    pub async fn run(self) {
        super::reconnecting(&self.stop, "SQLite commit watch", || self.watch()).await;
    }

    /// Watches until stopped or the connection fails.
    async fn watch(&self) -> Result<(), sqlx::Error> {
        let options = self
            .store
            .db()
            .get_sqlite_connection_pool()
            .connect_options();
        let mut connection = SqliteConnection::connect_with(&options).await?;
        let mut writes = wal_writes(options.get_filename());
        // Whatever was committed while not watching was missed: look once.
        self.store.notify_committed();
        let mut seen = data_version(&mut connection).await?;
        let mut last_change = Instant::now();
        let mut next_tick = Instant::now() + self.poll_interval;
        loop {
            let follow_until = tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep_until(next_tick) => {
                    let idle = writes.is_some() && last_change.elapsed() >= IDLE_AFTER;
                    let interval = if idle { IDLE_POLL_INTERVAL } else { self.poll_interval };
                    next_tick = Instant::now() + interval;
                    None
                }
                () = WalWrites::next(&mut writes) => {
                    if last_change.elapsed() < QUIET_BEFORE_FOLLOWING {
                        continue;
                    }
                    tokio::select! {
                        () = self.stop.cancelled() => break,
                        () = self.store.own_writes_ended() => {}
                    }
                    Some(Instant::now() + WRITE_FOLLOW_WINDOW)
                }
            };
            loop {
                let version = data_version(&mut connection).await?;
                if version != seen {
                    seen = version;
                    last_change = Instant::now();
                    next_tick = next_tick.min(last_change + self.poll_interval);
                    self.store.notify_committed();
                    break;
                }
                if follow_until.is_none_or(|until| Instant::now() >= until) {
                    break;
                }
                tokio::task::yield_now().await;
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
