//! Limits on how many tasks of a component run at once across the cluster
//! ([`crate::ComponentConfig::max_running`], ADR 0079).
//!
//! A task of a limited component takes a place (`queue_component_slot`, under its lease)
//! before its executor starts, counting the places held under a per-component lock: a
//! PostgreSQL advisory lock, or SQLite's one writer. A place whose task has moved on (ended,
//! rescued, claimed again) is free, so a dead node's places free themselves. Once every
//! place is taken the component is paused (`queue_component_pause`, by [`LIMIT_PAUSER`]), so
//! claims pass its tasks over instead of claiming and handing them back; a task that was
//! claimed before the pause and finds no place yields, keeping its place in the queue and
//! its attempt. Releasing a place, or the periodic sweep after a crash, lifts the pause.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter, Set,
    Statement,
};

use super::entity::{component_pause, component_slot};
use super::{Store, WriteClass, announce};
use crate::error::QueueError;
use crate::task::Task;

/// Who a component's pause is by while its running limit is reached; an admin's pause is
/// by their name and is never lifted by the limit.
pub const LIMIT_PAUSER: &str = "(running limit)";

impl Store {
    /// Takes one of `limit` places of `task`'s component for it; `false` when all are held.
    pub(crate) async fn limit_place_take(
        &self,
        task: &Task,
        limit: u32,
    ) -> Result<bool, QueueError> {
        let component = task.execution_component_name.as_str();
        let txn = self.begin_write_as(WriteClass::Background).await?;
        self.lock_component(&*txn, component).await?;
        let held = held_places(&*txn, component).await?;
        let taken = held < u64::from(limit);
        if taken {
            component_slot::Entity::insert(component_slot::ActiveModel {
                task_id: Set(task.id),
                component: Set(component.to_owned()),
                lease_version: Set(task.lease_version),
            })
            .on_conflict(
                OnConflict::column(component_slot::Column::TaskId)
                    .update_column(component_slot::Column::LeaseVersion)
                    .to_owned(),
            )
            .exec_without_returning(&*txn)
            .await?;
        }
        if held + u64::from(taken) >= u64::from(limit) {
            self.pause_for_limit(&*txn, component).await?;
        }
        txn.commit().await?;
        Ok(taken)
    }

    /// Gives back the place `task` took under its lease and, below `limit`, lifts the
    /// limit's pause.
    pub(crate) async fn limit_place_release(
        &self,
        task: &Task,
        limit: u32,
    ) -> Result<(), QueueError> {
        let component = task.execution_component_name.as_str();
        let txn = self.begin_write_as(WriteClass::Background).await?;
        self.lock_component(&*txn, component).await?;
        // Under its own lease only: a task rescued from this node and claimed again holds
        // its place under the new lease, which this late release must not free.
        component_slot::Entity::delete_many()
            .filter(component_slot::Column::TaskId.eq(task.id))
            .filter(component_slot::Column::LeaseVersion.eq(task.lease_version))
            .exec(&*txn)
            .await?;
        let lifted = self.settle_pause(&*txn, component, limit).await?;
        txn.commit().await?;
        if lifted {
            self.notify_committed();
        }
        Ok(())
    }

    /// Frees the places of tasks that moved on and sets the limit's pause to match: after a
    /// node died holding places, nothing else would lift it.
    pub(crate) async fn limit_sweep(&self, component: &str, limit: u32) -> Result<(), QueueError> {
        let txn = self.begin_write_as(WriteClass::Background).await?;
        self.lock_component(&*txn, component).await?;
        let lifted = self.settle_pause(&*txn, component, limit).await?;
        txn.commit().await?;
        if lifted {
            self.notify_committed();
        }
        Ok(())
    }

    /// Pauses or unpauses `component` by its places held; `true` if the pause was lifted.
    async fn settle_pause<C: ConnectionTrait>(
        &self,
        txn: &C,
        component: &str,
        limit: u32,
    ) -> Result<bool, QueueError> {
        if held_places(txn, component).await? >= u64::from(limit) {
            self.pause_for_limit(txn, component).await?;
            return Ok(false);
        }
        let lifted = component_pause::Entity::delete_many()
            .filter(component_pause::Column::Component.eq(component))
            .filter(component_pause::Column::PausedBy.eq(LIMIT_PAUSER))
            .exec(txn)
            .await?
            .rows_affected
            > 0;
        if lifted {
            announce::notify_wake(txn).await?;
        }
        Ok(lifted)
    }

    /// Pauses `component` for its limit unless it is paused already (by an admin, say).
    async fn pause_for_limit<C: ConnectionTrait>(
        &self,
        txn: &C,
        component: &str,
    ) -> Result<(), QueueError> {
        component_pause::Entity::insert(component_pause::ActiveModel {
            component: Set(component.to_owned()),
            paused_date: Set(self.clock.now()),
            paused_by: Set(LIMIT_PAUSER.to_owned()),
        })
        .on_conflict(
            OnConflict::column(component_pause::Column::Component)
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
        Ok(())
    }

    /// Makes the component's counting and taking one at a time across the cluster (SQLite's
    /// writer already is).
    async fn lock_component<C: ConnectionTrait>(
        &self,
        txn: &C,
        component: &str,
    ) -> Result<(), QueueError> {
        if self.backend == DbBackend::Postgres {
            txn.execute_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 79))",
                [format!("running limit:{component}").into()],
            ))
            .await?;
        }
        Ok(())
    }
}

/// The places of `component` held by tasks still running under the lease they took them
/// with, after deleting the rest.
async fn held_places<C: ConnectionTrait>(txn: &C, component: &str) -> Result<u64, QueueError> {
    component_slot::Entity::delete_many()
        .filter(component_slot::Column::Component.eq(component))
        .filter(Expr::cust(
            "NOT EXISTS (SELECT 1 FROM queue_task t \
             WHERE t.id = queue_component_slot.task_id \
               AND t.lease_version = queue_component_slot.lease_version \
               AND t.workflow_status IN ('SCHEDULING', 'EXECUTING'))",
        ))
        .exec(txn)
        .await?;
    Ok(component_slot::Entity::find()
        .filter(component_slot::Column::Component.eq(component))
        .count(txn)
        .await?)
}
