//! The counts the triggers on `queue_task` keep (see `m20261124_000060_task_counts`): tasks
//! by component and status, and completions per minute. Reading them sums a few rows per
//! (component, status) or minute, whatever the number of retained tasks; compacting them
//! folds the per-session deltas back into one row each.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Iden};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

use super::Store;
use super::entity::{task_count, throughput};
use crate::error::QueueError;
use crate::state::TaskStatus;
use crate::task::{StatusCount, TaskFilter};

/// PostgreSQL: every session's deltas (`shard` ≠ 0) summed into shard 0, in one statement.
/// A session still adding to a shard row being folded waits for the fold to commit, then
/// inserts a new row for itself: no delta is lost or counted twice.
const FOLD_SHARDS: &str = "WITH folded AS ( \
         DELETE FROM queue_task_count WHERE shard <> 0 RETURNING component, status, tasks) \
     INSERT INTO queue_task_count AS c (component, status, shard, tasks) \
     SELECT component, status, 0, SUM(tasks) FROM folded GROUP BY component, status \
     ON CONFLICT (component, status, shard) DO UPDATE SET tasks = c.tasks + excluded.tasks";

impl Store {
    /// How many tasks match `filter`, which names no owner (the counts are not kept per
    /// owner).
    pub(crate) async fn counted_tasks(&self, filter: &TaskFilter) -> Result<u64, QueueError> {
        debug_assert!(super::read::counted_by_triggers(filter));
        let mut select = task_count::Entity::find()
            .select_only()
            .column_as(sum(task_count::Column::Tasks), "tasks");
        if !filter.statuses.is_empty() {
            select = select.filter(task_count::Column::Status.is_in(filter.statuses.clone()));
        }
        if let Some(component) = &filter.component {
            select = select.filter(task_count::Column::Component.eq(component.as_str()));
        }
        let total = select
            .into_tuple::<Option<i64>>()
            .one(&self.db)
            .await?
            .flatten()
            .unwrap_or(0);
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// How many tasks each component has in each status (statuses without tasks left out).
    pub async fn task_count_by_status(&self) -> Result<Vec<StatusCount>, QueueError> {
        let rows: Vec<(String, TaskStatus, i64)> = task_count::Entity::find()
            .select_only()
            .column(task_count::Column::Component)
            .column(task_count::Column::Status)
            .column_as(sum(task_count::Column::Tasks), "count")
            .group_by(task_count::Column::Component)
            .group_by(task_count::Column::Status)
            .having(Expr::col(task_count::Column::Tasks).sum().ne(0))
            .order_by_asc(task_count::Column::Component)
            .into_tuple()
            .all(&self.db)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(component, status, count)| StatusCount {
                component,
                status,
                count,
            })
            .collect())
    }

    /// Tasks completed in each of the last `minutes` minutes of the clock, oldest first, the
    /// last being the minute `now` is in: the throughput over that window.
    pub async fn task_throughput(
        &self,
        now: DateTime<Utc>,
        minutes: usize,
    ) -> Result<Vec<i64>, QueueError> {
        let window = i64::try_from(minutes)
            .map_err(|_| QueueError::Invalid("the throughput window is too long".into()))?;
        let first = epoch_minute(now) - window + 1;
        let rows: Vec<(i64, i64)> = throughput::Entity::find()
            .select_only()
            .column(throughput::Column::Minute)
            .column_as(sum(throughput::Column::Completed), "completed")
            .filter(throughput::Column::Minute.gte(first))
            .filter(throughput::Column::Minute.lt(first + window))
            .group_by(throughput::Column::Minute)
            .into_tuple()
            .all(&self.db)
            .await?;
        let mut per_minute = vec![0; minutes];
        for (minute, completed) in rows {
            if let Some(slot) = usize::try_from(minute - first)
                .ok()
                .and_then(|i| per_minute.get_mut(i))
            {
                *slot += completed;
            }
        }
        Ok(per_minute)
    }

    /// Keeps the counts' tables small: on PostgreSQL folds every session's deltas into one
    /// row per (component, status), then drops the counts that are zero and the minutes of
    /// throughput before `minutes_before`. The pruner calls it after each prune.
    pub async fn counts_compact(&self, minutes_before: DateTime<Utc>) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        if self.backend == DbBackend::Postgres {
            txn.execute_unprepared(FOLD_SHARDS).await?;
        }
        task_count::Entity::delete_many()
            .filter(task_count::Column::Tasks.eq(0))
            .exec(&*txn)
            .await?;
        throughput::Entity::delete_many()
            .filter(throughput::Column::Minute.lt(epoch_minute(minutes_before)))
            .exec(&*txn)
            .await?;
        txn.commit().await?;
        Ok(())
    }
}

/// `SUM(column)` as a BIGINT: PostgreSQL sums BIGINTs into a NUMERIC, which does not decode
/// as an `i64`.
fn sum(column: impl Iden) -> Expr {
    Expr::cust(format!("CAST(SUM({}) AS BIGINT)", column.to_string()))
}

/// The minute `time` is in, counted from the Unix epoch: `queue_throughput`'s key.
fn epoch_minute(time: DateTime<Utc>) -> i64 {
    time.timestamp().div_euclid(60)
}
