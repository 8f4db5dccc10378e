//! Which stores hear the other nodes' task changes (PostgreSQL only). A store with
//! subscribers lists its event origin in `queue_watcher`, and a claim or a completion
//! announces its tasks only while some other store is listed (see
//! [`super::announce::announcing`]): announcing what nobody hears took about a quarter of
//! the server's statement time in a drain.
//!
//! The first [`Store::subscribe`] lists the store before it returns, so every change that
//! starts after a subscription is announced. The runtime's heartbeat keeps the entry fresh
//! while anyone subscribes and removes it once nobody does; the entry of a process that
//! died lapses at its `expires_date`, and lapsed entries are removed whenever an entry is
//! written.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use super::Store;
use crate::error::QueueError;

/// How long an entry lasts unless the heartbeat refreshes it: many heartbeats at the
/// default interval.
pub(crate) const WATCH_TTL: Duration = Duration::from_secs(60);

/// Lists a store for `$2` seconds more, and removes lapsed entries.
const LIST: &str = "WITH lapsed AS (DELETE FROM queue_watcher WHERE expires_date < now()) \
     INSERT INTO queue_watcher (origin, expires_date) \
     VALUES ($1, now() + make_interval(secs => $2)) \
     ON CONFLICT (origin) DO UPDATE SET expires_date = excluded.expires_date";

/// Removes a store's entry, and lapsed ones.
const UNLIST: &str = "DELETE FROM queue_watcher WHERE origin = $1 OR expires_date < now()";

impl Store {
    /// Lists this store as watching, unless it is already.
    pub(crate) async fn watch_start(&self) -> Result<(), QueueError> {
        if self.backend != DbBackend::Postgres {
            return Ok(());
        }
        let mut listed = self.events.watch_entry().lock().await;
        if !*listed {
            self.watch_write(LIST, Some(WATCH_TTL)).await?;
            *listed = true;
        }
        Ok(())
    }

    /// The heartbeat's part: while anyone subscribes, keeps the entry for `ttl` more;
    /// once nobody does, removes it.
    pub(crate) async fn watch_refresh(&self, ttl: Duration) -> Result<(), QueueError> {
        if self.backend != DbBackend::Postgres {
            return Ok(());
        }
        let mut listed = self.events.watch_entry().lock().await;
        if self.events.has_subscribers() {
            self.watch_write(LIST, Some(ttl)).await?;
            *listed = true;
        } else if *listed {
            self.watch_write(UNLIST, None).await?;
            *listed = false;
        }
        Ok(())
    }

    async fn watch_write(&self, sql: &str, ttl: Option<Duration>) -> Result<(), QueueError> {
        let mut values = vec![self.events.origin().into()];
        values.extend(ttl.map(|ttl| ttl.as_secs_f64().into()));
        self.db
            .execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                sql,
                values,
            ))
            .await?;
        Ok(())
    }
}
