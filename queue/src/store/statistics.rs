//! The query planner's statistics, which the node keeps up to date where a table has grown
//! tenfold since it was last analysed, or has rows and never was (or counted none).
//!
//! SQLite plans a query from `sqlite_stat1`, which only `ANALYZE` (or `PRAGMA optimize`)
//! writes. Without it, a caseload imported after the schema was made is planned as if its
//! tables were tiny: a Watch of a saved name query walked every person by id instead of
//! looking the name up, and a node serving a busy office fell far behind (ADR 0044).
//!
//! PostgreSQL's autovacuum analyses changed tables when it runs, but it may be off, and it
//! looks at most once a minute: a first import fills `person` from nothing far faster. A
//! prepared statement planned while the table was empty keeps that plan until the table is
//! analysed; the import's look-up of 5,000 school ids then scanned every person for each
//! batch, and the import slowed from thousands of rows a second to hundreds.

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use super::Store;
use crate::error::QueueError;

/// Analyses the tables whose size has changed much since they were last analysed, or that
/// never were, with SQLite's own bound on the rows each index's analysis reads, so a run
/// on a million-row table takes milliseconds. A no-op where nothing changed.
const SQLITE_OPTIMIZE: &str = "PRAGMA optimize = 0x10002";

/// The tables of the store's schema that take space and were never analysed or counted no
/// rows when they were (an analysis while a first batch was being written, say), or have
/// ten times the pages they had then: SQLite's `optimize` rule, read from the catalog
/// (exact now, where the activity counters lag by seconds).
const POSTGRES_GROWN_TABLES: &str = "SELECT quote_ident(c.relname) FROM pg_class c \
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' \
       AND pg_relation_size(c.oid) > 0 \
       AND (c.reltuples <= 0 OR pg_relation_size(c.oid) \
            >= 10 * current_setting('block_size')::bigint * greatest(c.relpages, 1))";

impl Store {
    /// Brings the planner's statistics up to date where tables have grown (or, on SQLite,
    /// shrunk) tenfold or were never analysed: at the node's start, with each prune, and
    /// from work that fills a table fast (a people import).
    pub async fn refresh_planner_statistics(&self) -> Result<(), QueueError> {
        match self.backend {
            DbBackend::Sqlite => {
                // A write (the statistics tables) like any other: it takes the gate's turn.
                let txn = self.begin_write().await?;
                txn.execute_unprepared(SQLITE_OPTIMIZE).await?;
                txn.commit().await?;
            }
            backend => {
                let grown = self
                    .db
                    .query_all_raw(Statement::from_string(backend, POSTGRES_GROWN_TABLES))
                    .await?;
                for row in grown {
                    let table: String = row.try_get_by_index(0)?;
                    // Another node analysing the same table already does the work.
                    self.db
                        .execute_unprepared(&format!("ANALYZE (SKIP_LOCKED) {table}"))
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// [`Store::refresh_planner_statistics`] where it is only a speed-up (a node's start, a
    /// task filling a table, a request that created people): a failure is logged and the
    /// caller goes on, slower at worst.
    pub async fn refresh_planner_statistics_or_warn(&self) {
        if let Err(error) = self.refresh_planner_statistics().await {
            tracing::warn!(%error, "could not refresh the planner's statistics");
        }
    }
}
