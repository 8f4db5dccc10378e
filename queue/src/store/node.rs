//! Node liveness and the jobs that keep the table healthy: heartbeats, rescue of tasks held
//! by dead nodes, and pruning of old finished tasks.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Condition, Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect, Set};
use uuid::Uuid;

use super::entity::node;
use super::entity::task::{self, Column};
use super::transition::{guarded, set_transition};
use super::{INSERT_CHUNK, Store, history};
use crate::error::QueueError;
use crate::state::{TaskStatus, Transition};
use crate::store::IdListFilter;

/// Which node incarnation this process is, and what it tells the cluster about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeIdentity {
    /// The configured identity, shared by all incarnations (e.g. the host name).
    pub system_id: String,
    /// `<system_id>-<startup timestamp>`: unique per start, so a restarted node can tell
    /// its previous incarnation's tasks from its own.
    pub node_id: String,
    pub started: DateTime<Utc>,
    /// The machine's host name (from the kernel; empty where it cannot be read).
    pub host: String,
    pub pid: u32,
    /// The queue's version (the application may set its own).
    pub version: String,
    /// Executor slots.
    pub worker_slots: usize,
}

impl NodeIdentity {
    /// A new incarnation of `system_id` starting at `started`, in this process.
    pub fn new(system_id: impl Into<String>, started: DateTime<Utc>) -> Self {
        let system_id = system_id.into();
        let node_id = format!("{system_id}-{}", started.format("%Y%m%dT%H%M%S%.6fZ"));
        Self {
            system_id,
            node_id,
            started,
            host: host_name(),
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            worker_slots: 0,
        }
    }
}

/// The host name as the kernel knows it (Linux), without a dependency for one file read.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

/// What one rescue pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RescueOutcome {
    /// Put back to QUEUED (their attempt spent).
    pub retried: Vec<Uuid>,
    /// Out of attempts, or parked as suspects (see [`Store::task_rescue_many`]): FAILURE.
    pub failed: Vec<Uuid>,
}

/// The message of a task parked because the nodes running it kept dying.
pub fn parked_message(crashes: i32) -> String {
    format!(
        "parked: {crashes} nodes died while running it, so it may be what kills them; \
         retry it once the cause is found"
    )
}

impl Store {
    /// Records that `node` is alive at `now`, running `tasks_running` tasks (insert or
    /// refresh its row).
    pub async fn node_heartbeat(
        &self,
        node: &NodeIdentity,
        tasks_running: usize,
        now: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        let row = node::ActiveModel {
            node_id: Set(node.node_id.clone()),
            system_id: Set(node.system_id.clone()),
            started_date: Set(node.started),
            heartbeat_date: Set(now),
            host: Set(Some(node.host.clone())),
            pid: Set(i32::try_from(node.pid).ok()),
            version: Set(Some(node.version.clone())),
            worker_slots: Set(i32::try_from(node.worker_slots).unwrap_or(i32::MAX)),
            tasks_running: Set(i32::try_from(tasks_running).unwrap_or(i32::MAX)),
            stopped_date: Set(None),
        };
        node::Entity::insert(row)
            .on_conflict(
                OnConflict::column(node::Column::NodeId)
                    .update_columns([node::Column::HeartbeatDate, node::Column::TasksRunning])
                    .to_owned(),
            )
            .exec_without_returning(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// How many nodes of other systems than `node`'s have beaten since `cutoff` and not
    /// stopped: the nodes that may be claiming tasks beside it. (An earlier incarnation of
    /// `node`'s own system is dead once `node` runs, as the rescuer sees it.)
    pub async fn node_count_others_alive(
        &self,
        node: &NodeIdentity,
        cutoff: DateTime<Utc>,
    ) -> Result<u64, QueueError> {
        Ok(node::Entity::find()
            .filter(node::Column::SystemId.ne(node.system_id.as_str()))
            .filter(node::Column::StoppedDate.is_null())
            .filter(node::Column::HeartbeatDate.gte(cutoff))
            .count(&self.db)
            .await?)
    }

    /// Marks a node stopped on a clean shutdown (it holds no tasks any more); the row stays
    /// for the admin view until the pruner removes it with the other old rows.
    pub async fn node_mark_stopped(
        &self,
        node_id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        let txn = self.begin_write().await?;
        node::Entity::update_many()
            .col_expr(node::Column::StoppedDate, Expr::value(now))
            .col_expr(node::Column::TasksRunning, Expr::value(0))
            .filter(node::Column::NodeId.eq(node_id))
            .exec(&*txn)
            .await?;
        Ok(txn.commit().await?)
    }

    /// Takes tasks away from dead node incarnations: back to QUEUED with the attempt spent,
    /// or FAILURE when it was the last one. `node` is the node doing the rescue; `cutoff`
    /// the oldest heartbeat that still counts as alive.
    ///
    /// Each rescue counts a crash against the task, and a task whose nodes died
    /// `park_after_crashes` times is a suspect: it may be what kills them (a stack overflow
    /// or an abort takes the whole process down, and no retry policy sees it), so it is
    /// parked at FAILURE with [`parked_message`] instead of being handed to the next node.
    pub async fn task_rescue_many(
        &self,
        node: &NodeIdentity,
        cutoff: DateTime<Utc>,
        park_after_crashes: i32,
        now: DateTime<Utc>,
    ) -> Result<RescueOutcome, QueueError> {
        // Held by a node incarnation that is not alive: no heartbeat since the cutoff, or an
        // older incarnation of this node's system id (this node's restart proves it dead,
        // without waiting for the timeout).
        let dead = || {
            let alive = Query::select()
                .column(node::Column::NodeId)
                .from(node::Entity)
                .and_where(node::Column::HeartbeatDate.gt(cutoff))
                .cond_where(
                    Condition::any()
                        .add(node::Column::SystemId.ne(node.system_id.as_str()))
                        .add(node::Column::NodeId.eq(node.node_id.as_str())),
                )
                .to_owned();
            Column::ScheduledByProcess.not_in_subquery(alive)
        };
        let reason = "rescued: the node holding it stopped";
        let retry = Transition::Retry {
            at: now,
            error: reason.to_owned(),
        };
        let fail = Transition::Fail {
            error: format!("{reason}, and no attempts are left"),
        };
        let park = Transition::Fail {
            error: parked_message(park_after_crashes),
        };
        // No index leads to the running tasks (none may name a status; see
        // `m20261124_000080_hot_updates`), so finding them reads the table: done as a read,
        // before any write transaction, so that on SQLite the pass does not hold the one
        // write lock while it reads a million retained tasks; and usually it finds nothing,
        // and writes nothing. The UPDATEs below test every condition again, by id.
        let orphans: Vec<Uuid> = task::Entity::find()
            .select_only()
            .column(Column::Id)
            .filter(Column::WorkflowStatus.is_in(TaskStatus::RUNNING))
            .filter(dead())
            .into_tuple()
            .all(&self.db)
            .await?;
        if orphans.is_empty() {
            return Ok(RescueOutcome::default());
        }
        let crashed = Expr::col(Column::CrashCount).add(1);
        let rescue = |transition: &Transition| {
            guarded(
                set_transition(task::Entity::update_many(), transition, now, &node.node_id)
                    .col_expr(Column::CrashCount, crashed.clone()),
                transition,
            )
            .filter(Column::Id.in_id_list(self.backend, orphans.iter().copied()))
            .filter(dead())
        };
        let txn = self.begin_write().await?;
        let parked = rescue(&park).filter(crashed.clone().gte(park_after_crashes));
        let mut failed = self.update_tasks(&*txn, parked).await?;
        let out_of_attempts =
            rescue(&fail).filter(Expr::col(Column::Attempt).gte(Expr::col(Column::MaxAttempts)));
        failed.extend(self.update_tasks(&*txn, out_of_attempts).await?);
        let retried = self.update_tasks(&*txn, rescue(&retry)).await?;
        let changed: Vec<_> = failed.iter().chain(&retried).cloned().collect();
        if changed.is_empty() {
            return Ok(RescueOutcome::default());
        }
        // Every rescued task was running: its history also stores the claim that ended.
        let entries = changed
            .iter()
            .flat_map(|task| {
                history::transition_entries(task, Some(task.attempt), &node.node_id, now)
            })
            .collect();
        self.commit_transitions(txn, &changed, entries).await?;
        Ok(RescueOutcome {
            retried: retried.iter().map(|task| task.id).collect(),
            failed: failed.iter().map(|task| task.id).collect(),
        })
    }

    /// Deletes up to `limit` finished tasks (and, by cascade, their history) that stopped
    /// before `stopped_before`; returns how many. Active tasks are never touched.
    pub async fn task_prune(
        &self,
        stopped_before: DateTime<Utc>,
        limit: u64,
    ) -> Result<u64, QueueError> {
        // A task stops after it was created, so the range of `idx_queue_task_created` up to
        // the cutoff holds every prunable task (no index names the stop date or status).
        let ids: Vec<Uuid> = task::Entity::find()
            .select_only()
            .column(Column::Id)
            .filter(Column::CreatedDate.lt(stopped_before))
            .filter(Column::WorkflowStoppedDate.lt(stopped_before))
            .filter(Column::WorkflowStatus.is_in(TaskStatus::TERMINAL))
            .limit(limit)
            .into_tuple()
            .all(&self.db)
            .await?;
        let txn = self.begin_write().await?;
        let mut deleted = 0;
        for chunk in ids.chunks(INSERT_CHUNK) {
            deleted += task::Entity::delete_many()
                .filter(Column::Id.is_in(chunk.iter().copied()))
                .filter(Column::WorkflowStatus.is_in(TaskStatus::TERMINAL))
                .exec(&*txn)
                .await?
                .rows_affected;
        }
        txn.commit().await?;
        Ok(deleted)
    }

    /// Deletes the rows of nodes whose last heartbeat is older than `before`. Their tasks, if
    /// any, still count as held by a dead node.
    pub async fn node_prune(&self, before: DateTime<Utc>) -> Result<u64, QueueError> {
        let txn = self.begin_write().await?;
        let deleted = node::Entity::delete_many()
            .filter(node::Column::HeartbeatDate.lt(before))
            .exec(&*txn)
            .await?
            .rows_affected;
        txn.commit().await?;
        Ok(deleted)
    }
}
