//! The periodic jobs' shared rows: registration, claiming a due time, recording the result,
//! and admins' run now, pause and resume.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, Set};

use super::entity::periodic_job::{self, Column};
use super::entity::scheduler_lock;
use super::{Store, WriteClass};
use crate::error::QueueError;
use crate::periodic::PeriodicJobStatus;

/// A job's declared `lock_at_most_for` and `lock_at_least_for`, in milliseconds, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LockTimes {
    pub at_most_ms: i64,
    pub at_least_ms: i64,
}

impl Store {
    /// Records a job (name, schedule, first due time, lock times) unless it is known with
    /// the same schedule; a changed schedule starts over from `first_due`. The lock times
    /// are those of the latest registration.
    pub(crate) async fn periodic_register(
        &self,
        name: &str,
        schedule: &str,
        first_due: DateTime<Utc>,
        locks: LockTimes,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        let row = periodic_job::ActiveModel {
            name: Set(name.to_owned()),
            schedule: Set(schedule.to_owned()),
            next_run_at: Set(Some(first_due)),
            ..Default::default()
        };
        periodic_job::Entity::insert(row)
            .on_conflict(
                OnConflict::column(Column::Name)
                    .update_columns([Column::Schedule, Column::NextRunAt])
                    .action_and_where(
                        Expr::col((periodic_job::Entity, Column::Schedule)).ne(schedule),
                    )
                    .to_owned(),
            )
            .exec_without_returning(&*txn)
            .await?;
        periodic_job::Entity::update_many()
            .col_expr(Column::LockAtMostMs, Expr::value(locks.at_most_ms))
            .col_expr(Column::LockAtLeastMs, Expr::value(locks.at_least_ms))
            .filter(Column::Name.eq(name))
            .exec(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// One job's row.
    pub(crate) async fn periodic_get(
        &self,
        name: &str,
    ) -> Result<Option<PeriodicJobStatus>, QueueError> {
        Ok(periodic_job::Entity::find_by_id(name.to_owned())
            .one(&self.db)
            .await?)
    }

    /// Claims due time `due` of job `name` for `node_id`: true for exactly one caller per due
    /// time, however many nodes try. Moves the next due time on to `next`.
    pub(crate) async fn periodic_claim(
        &self,
        name: &str,
        due: DateTime<Utc>,
        next: DateTime<Utc>,
        node_id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, QueueError> {
        let txn = self.begin_write().await?;
        let claimed = periodic_job::Entity::update_many()
            .col_expr(Column::LastDueAt, Expr::value(due))
            .col_expr(Column::NextRunAt, Expr::value(next))
            .col_expr(Column::LastStartedAt, Expr::value(now))
            .col_expr(
                Column::LastFinishedAt,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .col_expr(Column::LastResult, Expr::value(Option::<String>::None))
            .col_expr(Column::LastNode, Expr::value(node_id))
            .filter(Column::Name.eq(name))
            .filter(
                Condition::any()
                    .add(Column::LastDueAt.is_null())
                    .add(Column::LastDueAt.lt(due)),
            )
            .exec(&*txn)
            .await?
            .rows_affected
            == 1;
        txn.commit().await?;
        Ok(claimed)
    }

    /// Records how the run for `due` ended (unless a later due time has been claimed since);
    /// a run `skipped` because the job's lock was held is also counted.
    pub(crate) async fn periodic_finish(
        &self,
        name: &str,
        due: DateTime<Utc>,
        result: &str,
        now: DateTime<Utc>,
        skipped: bool,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        let mut update = periodic_job::Entity::update_many()
            .col_expr(Column::LastFinishedAt, Expr::value(now))
            .col_expr(Column::LastResult, Expr::value(result));
        if skipped {
            update = update
                .col_expr(Column::SkippedRuns, Expr::col(Column::SkippedRuns).add(1))
                .col_expr(Column::LastSkippedAt, Expr::value(now));
        }
        update
            .filter(Column::Name.eq(name))
            .filter(Column::LastDueAt.eq(due))
            .exec(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// Makes job `name` due now, by the database's clock, and wakes this node's job loops;
    /// `false` when there is no such job or it is paused (resume it first).
    ///
    /// An admin's run overrides the job's `lock_at_least_for` (a bound for its schedule):
    /// when no run is under way, what is left of the last run's lock is given up. A run
    /// under way keeps its lock, and the run asked for is then recorded as skipped.
    pub async fn periodic_run_now(&self, name: &str) -> Result<bool, QueueError> {
        let txn = self.begin_write_as(WriteClass::Interactive).await?;
        let now = self.db_now_on(&*txn).await?;
        // The row first: a node claiming a due time meanwhile waits for this transaction.
        let changed = periodic_job::Entity::update_many()
            .col_expr(Column::NextRunAt, Expr::value(now))
            .filter(Column::Name.eq(name))
            .filter(Column::Paused.eq(false))
            .exec(&*txn)
            .await?
            .rows_affected
            == 1;
        let idle = periodic_job::Entity::find_by_id(name.to_owned())
            .one(&*txn)
            .await?
            .is_some_and(|row| row.last_due_at.is_none() || row.last_finished_at.is_some());
        if changed && idle {
            scheduler_lock::Entity::update_many()
                .col_expr(scheduler_lock::Column::LockUntil, Expr::value(now))
                .filter(scheduler_lock::Column::Name.eq(crate::periodic::lock_name(name)))
                .filter(scheduler_lock::Column::LockUntil.gt(now))
                .exec(&*txn)
                .await?;
        }
        txn.commit().await?;
        self.events.periodic_changed();
        Ok(changed)
    }

    /// Pauses (no node runs it) or resumes job `name`; `false` when there is no such job or
    /// it already was. A resumed job whose due time passed while paused runs once, at once.
    pub async fn periodic_set_paused(&self, name: &str, paused: bool) -> Result<bool, QueueError> {
        let txn = self.begin_write_as(WriteClass::Interactive).await?;
        let changed = periodic_job::Entity::update_many()
            .col_expr(Column::Paused, Expr::value(paused))
            .filter(Column::Name.eq(name))
            .filter(Column::Paused.eq(!paused))
            .exec(&*txn)
            .await?
            .rows_affected
            == 1;
        txn.commit().await?;
        self.events.periodic_changed();
        Ok(changed)
    }

    /// A receiver that changes whenever an admin changed a periodic job in this process.
    pub(crate) fn periodic_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.events.periodic_receiver()
    }

    /// Every periodic job with its next and last run, by name: for the queue health view.
    pub async fn periodic_list(&self) -> Result<Vec<PeriodicJobStatus>, QueueError> {
        Ok(periodic_job::Entity::find()
            .order_by_asc(Column::Name)
            .all(&self.db)
            .await?)
    }
}
