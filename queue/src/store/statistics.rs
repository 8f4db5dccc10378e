//! The query planner's statistics on SQLite, which nothing refreshes on its own.
//!
//! SQLite plans a query from `sqlite_stat1`, which only `ANALYZE` (or `PRAGMA optimize`)
//! writes. Without it, a caseload imported after the schema was made is planned as if its
//! tables were tiny: a Watch of a saved name query walked every person by id instead of
//! looking the name up, and a node serving a busy office fell far behind (ADR 0044).
//! PostgreSQL's autovacuum analyses changed tables itself.

use sea_orm::{ConnectionTrait, DbBackend};

use super::Store;
use crate::error::QueueError;

/// Analyses the tables whose size has changed much since they were last analysed, or that
/// never were, with SQLite's own bound on the rows each index's analysis reads, so a run
/// on a million-row table takes milliseconds. A no-op where nothing changed.
const SQLITE_OPTIMIZE: &str = "PRAGMA optimize = 0x10002";

impl Store {
    /// SQLite: brings the planner's statistics up to date where tables have grown or shrunk
    /// (at the node's start and with each prune). Nothing on PostgreSQL.
    pub async fn refresh_planner_statistics(&self) -> Result<(), QueueError> {
        if self.backend != DbBackend::Sqlite {
            return Ok(());
        }
        // A write (the statistics tables) like any other: it takes the gate's turn.
        let txn = self.begin_write().await?;
        txn.execute_unprepared(SQLITE_OPTIMIZE).await?;
        txn.commit().await?;
        Ok(())
    }
}
