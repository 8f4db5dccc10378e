//! SQLite: copying the WAL back into the database file off the writers' path.
//!
//! SQLite checkpoints on its own in the connection whose commit takes the WAL past
//! `wal_autocheckpoint` pages (`database::connect` sets 40,000, ADR 0015), and that commit
//! returns only when the checkpoint has copied and synced them. The committing writer
//! still holds the store's write gate then, so every writer behind it, a person's sign-in
//! or submission included, waited for the copy as well (ADR 0052). A PASSIVE checkpoint
//! takes no write lock, so run from a connection of its own now and then it keeps the WAL
//! well below the mark and no commit pays for the copy; the mark stays as the backstop
//! should this fall behind.

use sea_orm::{ConnectionTrait, DbBackend};

use super::Store;
use crate::error::QueueError;

/// Copies what it can of the WAL without waiting for readers or the writer.
const SQLITE_PASSIVE_CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";

impl Store {
    /// SQLite: copies the committed part of the WAL into the database file, beside any
    /// writer and outside the write gate. Nothing on PostgreSQL.
    pub(crate) async fn checkpoint_wal(&self) -> Result<(), QueueError> {
        if self.backend != DbBackend::Sqlite {
            return Ok(());
        }
        self.db
            .execute_unprepared(SQLITE_PASSIVE_CHECKPOINT)
            .await?;
        Ok(())
    }
}
