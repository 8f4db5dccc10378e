//! The periodic jobs' shared rows: registration, claiming a due time, recording the result.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, Set};

use super::Store;
use super::entity::periodic_job::{self, Column};
use crate::error::QueueError;
use crate::periodic::PeriodicJobStatus;

impl Store {
    /// Records a job (name, schedule, first due time) unless it is known with the same
    /// schedule; a changed schedule starts over from `first_due`.
    pub(crate) async fn periodic_register(
        &self,
        name: &str,
        schedule: &str,
        first_due: DateTime<Utc>,
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

    /// Records how the run for `due` ended (unless a later due time has been claimed since).
    pub(crate) async fn periodic_finish(
        &self,
        name: &str,
        due: DateTime<Utc>,
        result: &str,
        now: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        periodic_job::Entity::update_many()
            .col_expr(Column::LastFinishedAt, Expr::value(now))
            .col_expr(Column::LastResult, Expr::value(result))
            .filter(Column::Name.eq(name))
            .filter(Column::LastDueAt.eq(due))
            .exec(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// Every periodic job with its next and last run, by name: for the queue health view.
    pub async fn periodic_list(&self) -> Result<Vec<PeriodicJobStatus>, QueueError> {
        Ok(periodic_job::Entity::find()
            .order_by_asc(Column::Name)
            .all(&self.db)
            .await?)
    }
}
