//! SQLite: copying the WAL back into the database file off the writers' path.
//!
//! SQLite checkpoints on its own in the connection whose commit takes the WAL past
//! `wal_autocheckpoint` pages (`database::connect` sets 40,000, ADR 0015), and that commit
//! returns only when the checkpoint has copied and synced them. The committing writer
//! still holds the store's write gate then, so every writer behind it, a person's sign-in
//! or submission included, waited for the copy as well (ADR 0052). A PASSIVE checkpoint
//! takes no write lock, so run from a connection of its own now and then it copies the WAL
//! beside the writers; the mark stays as the backstop should this fall behind.
//!
//! Copying is not enough to keep the WAL short: SQLite starts it again from the top only
//! when a write transaction begins with every frame copied, and under steady writes new
//! frames arrive while the copy runs, so it never is. The WAL then grew to the mark about
//! once a second and a batch's commit paid for the copy after all (ADR 0052). So a long
//! WAL gets a second pass between two write transactions, which copies the few frames the
//! first pass missed and lets the next writer start the WAL afresh.
//!
//! SQLite syncs the database file only in a pass that reaches the WAL's end, and a pass
//! beside a committing writer never does: the gated pass then synced every page the first
//! had copied, thousands of them, while people waited at the gate. So before the gated
//! pass the database file is synced outside the gate, and the gated pass's own sync has
//! only the pages it copied to write (ADR 0052). The batches keep writing during that
//! sync, so passes and syncs outside the gate repeat while a pass still finds many new
//! frames to copy; each round's sync is shorter than the last, and the gated pass is left
//! with what one short round let through (ADR 0052).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement};

use super::Store;
use crate::error::QueueError;

/// Copies what it can of the WAL without waiting for readers or the writer; answers the
/// WAL's length and how much of it is copied, in pages.
const SQLITE_PASSIVE_CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";

/// WAL pages (4 KiB each) from which a checkpoint takes a second pass between writes, so
/// the next writer starts the WAL afresh: 32 MiB. Shorter ones are left to grow; a second
/// pass takes a turn at the write gate, which a person may be waiting for.
const SQLITE_RESTART_WAL_AT_PAGES: i64 = 8_192;

/// New WAL frames a pass outside the gate may copy and still leave the rest to the gated
/// pass (4 MiB): the gated pass copies and syncs about this many while people wait.
const SQLITE_SETTLED_COPY_PAGES: i64 = 1_024;

/// Most syncs outside the gate before the gated pass, should the batches write as fast as
/// the rounds copy and they never settle.
const SQLITE_MAX_SYNC_ROUNDS: usize = 4;

/// How far a PASSIVE checkpoint got, in WAL frames (a page each).
#[derive(Clone, Copy, Debug, Default)]
struct WalProgress {
    /// Frames in the WAL.
    length: i64,
    /// Frames from the WAL's start that are copied into the database file.
    copied: i64,
}

impl Store {
    /// SQLite: copies the committed part of the WAL into the database file, beside any
    /// writer and outside the write gate; if the WAL is long, syncs what that copied and
    /// copies again until little is new, then copies what is left between two of this
    /// store's write transactions (see the module's doc). Nothing on PostgreSQL.
    pub(crate) async fn checkpoint_wal(&self) -> Result<(), QueueError> {
        if self.backend != DbBackend::Sqlite {
            return Ok(());
        }
        let mut progress = passive_checkpoint(&self.db).await?;
        if progress.length < SQLITE_RESTART_WAL_AT_PAGES {
            return Ok(());
        }
        let file = self.db.get_sqlite_connection_pool().connect_options();
        let path = file.get_filename().to_owned();
        for _ in 0..SQLITE_MAX_SYNC_ROUNDS {
            sync_database_file(path.clone()).await?;
            let next = passive_checkpoint(&self.db).await?;
            // Negative when a writer started the WAL afresh meanwhile: nothing to chase.
            let newly_copied = next.copied - progress.copied;
            progress = next;
            if newly_copied < SQLITE_SETTLED_COPY_PAGES {
                break;
            }
        }
        self.writes
            .run_between_writes(SQLITE_PASSIVE_CHECKPOINT)
            .await?;
        Ok(())
    }
}

impl Store {
    /// Whether this store's connections leave WAL checkpoints to an external replicator
    /// (opened with `wal_autocheckpoint = 0`, [`crate::database::WalCheckpoints::Replicator`]):
    /// then the node runs none either. Read from the pool, so the setting has one home.
    pub(crate) async fn wal_left_to_replicator(&self) -> Result<bool, QueueError> {
        if self.backend != DbBackend::Sqlite {
            return Ok(false);
        }
        let row = self
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "PRAGMA wal_autocheckpoint",
            ))
            .await?;
        let pages: i64 = match row {
            Some(row) => row.try_get_by_index(0)?,
            None => return Ok(false),
        };
        Ok(pages <= 0)
    }
}

/// Runs a PASSIVE checkpoint on `conn`; answers how far it got.
async fn passive_checkpoint(conn: &impl ConnectionTrait) -> Result<WalProgress, DbErr> {
    let row = conn
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            SQLITE_PASSIVE_CHECKPOINT,
        ))
        .await?;
    let Some(row) = row else {
        return Ok(WalProgress::default());
    };
    Ok(WalProgress {
        length: row.try_get_by_index(1)?,
        copied: row.try_get_by_index(2)?,
    })
}

/// Descriptors of the SQLite files this process has synced, opened once and never
/// closed: closing any descriptor of a file drops every POSIX lock the process holds on
/// it, SQLite's own included, and another process could then take the database from under
/// this one (<https://www.sqlite.org/howtocorrupt.html>, section 2.2).
static SYNCED_FILES: LazyLock<Mutex<HashMap<PathBuf, Arc<File>>>> = LazyLock::new(Mutex::default);

/// Writes the database file's copied pages to the disk (`fdatasync`) on a blocking thread.
async fn sync_database_file(path: PathBuf) -> Result<(), DbErr> {
    tokio::task::spawn_blocking(move || kept_open(&path)?.sync_data())
        .await
        .map_err(|e| e.to_string())
        .and_then(|synced| synced.map_err(|e| e.to_string()))
        .map_err(|e| DbErr::Custom(format!("syncing the database file: {e}")))
}

/// The process's descriptor of `path`, opened read-only on first use (see [`SYNCED_FILES`]).
fn kept_open(path: &Path) -> std::io::Result<Arc<File>> {
    let mut files = SYNCED_FILES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(file) = files.get(path) {
        return Ok(file.clone());
    }
    let file = Arc::new(File::open(path)?);
    files.insert(path.to_owned(), file.clone());
    Ok(file)
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use std::time::Duration;

    use sea_orm::ConnectionTrait;

    use crate::schema::QueueMigrator;
    use crate::store::Store;
    use crate::testing::{Backend, TestDatabase};

    /// Commits a write of about `pages` WAL pages through the store's writer.
    async fn write_pages(store: &Store, pages: i64) {
        let txn = store.begin_write().await.unwrap();
        // About a page a row: 4,000 bytes fit on a 4 KiB page once.
        txn.execute_unprepared(&format!(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {pages}) \
             INSERT INTO filler (body) SELECT randomblob(4000) FROM n"
        ))
        .await
        .unwrap();
        txn.commit().await.unwrap();
    }

    /// A write that commits while the checkpoint copies leaves frames it could not copy, and
    /// SQLite starts the WAL afresh only once every frame is copied: the checkpoint's second
    /// pass between writes must copy them, or under steady writes the WAL grows until a
    /// writer's commit copies it all while people wait (ADR 0052).
    #[tokio::test]
    async fn a_long_wal_starts_afresh_though_a_write_committed_during_the_copy() {
        let db = TestDatabase::create::<QueueMigrator>(Backend::Sqlite)
            .await
            .expect("SQLite is always available");
        let store = Store::new(db.conn.clone());
        store
            .db()
            .execute_unprepared("CREATE TABLE filler (body BLOB NOT NULL)")
            .await
            .unwrap();
        write_pages(&store, super::SQLITE_RESTART_WAL_AT_PAGES).await;
        // A write in progress while the checkpoint's first pass copies: it commits after.
        let during = store.begin_write().await.unwrap();
        during
            .execute_unprepared("INSERT INTO filler (body) VALUES (randomblob(4000))")
            .await
            .unwrap();
        let checkpoint = tokio::spawn({
            let store = store.clone();
            async move { store.checkpoint_wal().await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        during.commit().await.unwrap();
        checkpoint.await.unwrap().unwrap();
        write_pages(&store, 1).await;
        let pages = super::passive_checkpoint(store.db()).await.unwrap().length;
        assert!(
            pages < 10,
            "the WAL went on from its {pages}th page instead of starting afresh"
        );
    }

    /// The POSIX locks this process holds on `path`'s file, as `/proc/locks` lists them.
    #[cfg(target_os = "linux")]
    fn own_locks_on(path: &std::path::Path) -> Vec<String> {
        use std::os::unix::fs::MetadataExt;
        let inode = format!(":{}", std::fs::metadata(path).unwrap().ino());
        let pid = std::process::id().to_string();
        std::fs::read_to_string("/proc/locks")
            .unwrap()
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let ours = fields.get(1) == Some(&"POSIX")
                    && fields.get(4) == Some(&pid.as_str())
                    && fields.get(5).is_some_and(|file| file.ends_with(&inode));
                // From the lock's mode on: the list's own numbering may change.
                ours.then(|| fields[3..].join(" "))
            })
            .collect()
    }

    /// Syncing opens a descriptor of the database file beside SQLite's; closing it would
    /// drop SQLite's locks on the file, so another process could take the database from
    /// under this one (see `SYNCED_FILES`). SQLite holds a shared lock on a WAL database's
    /// file while any connection is open.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn syncing_the_database_file_keeps_sqlites_locks_on_it() {
        let db = TestDatabase::create::<QueueMigrator>(Backend::Sqlite)
            .await
            .expect("SQLite is always available");
        let path = db
            .conn
            .get_sqlite_connection_pool()
            .connect_options()
            .get_filename()
            .to_owned();
        let locks = own_locks_on(&path);
        assert!(
            !locks.is_empty(),
            "SQLite holds no lock on {path:?} to keep"
        );
        super::sync_database_file(path.clone()).await.unwrap();
        super::sync_database_file(path.clone()).await.unwrap();
        assert_eq!(own_locks_on(&path), locks);
    }
}
