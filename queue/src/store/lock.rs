//! The scheduler lock: a named, cluster-wide lock with ShedLock's semantics, kept in
//! `queue_scheduler_lock`.
//!
//! - **lock_at_most_for**: an acquisition holds the lock until `now + at_most`; a holder that
//!   dies simply lets it expire, so the lock never stays stuck.
//! - **lock_at_least_for**: releasing keeps the lock until `locked_at + at_least` if that is
//!   later than now, so a job that finished quickly is not run again by a peer whose clock
//!   is a little behind.
//! - **extension**: a holder doing long work moves `lock_until` forward while it still holds
//!   the lock.
//!
//! Every comparison uses the database's clock (`clock_timestamp()` on PostgreSQL), never a
//! node's, so nodes with skewed clocks agree on who holds what. SQLite is a single file on one
//! machine, whose clock every process shares; there the store's clock is the database's.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder, Statement,
};
use uuid::Uuid;

use super::Store;
use super::entity::scheduler_lock::{self, Column};
use crate::error::QueueError;

pub use super::entity::scheduler_lock::Model as SchedulerLock;

/// A held scheduler lock, returned by [`Store::lock_try_acquire`]. Dropping it without
/// [`Store::lock_release`] leaves the lock held until its `lock_at_most_for` runs out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockGrant {
    pub name: String,
    pub holder: String,
    /// When it was acquired, by the database's clock.
    pub locked_at: DateTime<Utc>,
    /// Held until then unless extended or released.
    pub lock_until: DateTime<Utc>,
    grant_id: Uuid,
}

impl Store {
    /// The database's current time: what every lock comparison is made against.
    pub async fn db_now(&self) -> Result<DateTime<Utc>, QueueError> {
        self.db_now_on(&self.db).await
    }

    /// [`Store::db_now`], read on `conn`. A lock operation reads it on its own transaction:
    /// on a second connection, every periodic job of a node could hold a transaction while
    /// waiting for a free connection of the pool, none of them ever getting one.
    pub(crate) async fn db_now_on<C: ConnectionTrait>(
        &self,
        conn: &C,
    ) -> Result<DateTime<Utc>, QueueError> {
        match self.backend {
            DbBackend::Postgres => {
                let row = conn
                    .query_one_raw(Statement::from_string(
                        self.backend,
                        "SELECT clock_timestamp() AS now",
                    ))
                    .await?
                    .ok_or_else(|| {
                        QueueError::Invalid("clock_timestamp() returned no row".into())
                    })?;
                Ok(row.try_get("", "now")?)
            }
            _ => Ok(self.clock.now()),
        }
    }

    /// Acquires `name` for `holder` unless someone holds it now; held for at most
    /// `lock_at_most_for`. Returns `None` when it is held by someone (including `holder`).
    pub async fn lock_try_acquire(
        &self,
        name: &str,
        holder: &str,
        lock_at_most_for: Duration,
    ) -> Result<Option<LockGrant>, QueueError> {
        let txn = self.begin_write().await?;
        let now = self.db_now_on(&*txn).await?;
        let grant = LockGrant {
            name: name.to_owned(),
            holder: holder.to_owned(),
            locked_at: now,
            lock_until: now + to_chrono(lock_at_most_for)?,
            grant_id: Uuid::now_v7(),
        };
        // Insert the row the first time; afterwards take it over only where it has expired.
        // On PostgreSQL a concurrent acquirer waits on the row and then re-checks the WHERE
        // against the winner's `lock_until`, so exactly one of them gets it.
        let statement = Query::insert()
            .into_table(scheduler_lock::Entity)
            .columns([
                Column::Name,
                Column::LockUntil,
                Column::LockedAt,
                Column::LockedBy,
                Column::GrantId,
            ])
            .values([
                grant.name.clone().into(),
                grant.lock_until.into(),
                grant.locked_at.into(),
                grant.holder.clone().into(),
                grant.grant_id.into(),
            ])
            .map_err(|e| QueueError::Invalid(e.to_string()))?
            .on_conflict(
                OnConflict::column(Column::Name)
                    .update_columns([
                        Column::LockUntil,
                        Column::LockedAt,
                        Column::LockedBy,
                        Column::GrantId,
                    ])
                    .action_and_where(
                        Expr::col((scheduler_lock::Entity, Column::LockUntil)).lte(now),
                    )
                    .to_owned(),
            )
            .returning_col(Column::GrantId)
            .to_owned();
        let won = txn.query_one(&statement).await?.is_some();
        txn.commit().await?;
        Ok(won.then_some(grant))
    }

    /// Holds the lock for `lock_at_most_for` from now, if `grant` still holds it. Returns
    /// false when the lock expired in the meantime (someone else may hold it now: stop).
    pub async fn lock_extend(
        &self,
        grant: &mut LockGrant,
        lock_at_most_for: Duration,
    ) -> Result<bool, QueueError> {
        let txn = self.begin_write().await?;
        let now = self.db_now_on(&*txn).await?;
        let until = now + to_chrono(lock_at_most_for)?;
        let extended = scheduler_lock::Entity::update_many()
            .col_expr(Column::LockUntil, Expr::value(until))
            .filter(Column::Name.eq(grant.name.as_str()))
            .filter(Column::GrantId.eq(grant.grant_id))
            .filter(Column::LockUntil.gt(now))
            .exec(&*txn)
            .await?
            .rows_affected
            == 1;
        txn.commit().await?;
        if extended {
            grant.lock_until = until;
        }
        Ok(extended)
    }

    /// Releases the lock, keeping it until `locked_at + lock_at_least_for` if that is later
    /// than now. Releasing a grant that already expired changes nothing.
    pub async fn lock_release(
        &self,
        grant: LockGrant,
        lock_at_least_for: Duration,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        let now = self.db_now_on(&*txn).await?;
        let until = Ord::max(now, grant.locked_at + to_chrono(lock_at_least_for)?);
        scheduler_lock::Entity::update_many()
            .col_expr(Column::LockUntil, Expr::value(until))
            .filter(Column::Name.eq(grant.name.as_str()))
            .filter(Column::GrantId.eq(grant.grant_id))
            .filter(Column::LockUntil.gt(now))
            .exec(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// The locks held now (by the database's clock), by name: for the queue health view.
    pub async fn lock_list_held(&self) -> Result<Vec<SchedulerLock>, QueueError> {
        let now = self.db_now().await?;
        Ok(scheduler_lock::Entity::find()
            .filter(Column::LockUntil.gt(now))
            .order_by_asc(Column::Name)
            .all(&self.db)
            .await?)
    }
}

fn to_chrono(duration: Duration) -> Result<chrono::Duration, QueueError> {
    chrono::Duration::from_std(duration)
        .map_err(|_| QueueError::Invalid(format!("lock duration {duration:?} is too long")))
}
