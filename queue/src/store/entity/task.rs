//! `queue_task`: one row per task (DESIGN.md §3).

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::Serialize;

use crate::state::TaskStatus;

/// A task row.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize)]
#[sea_orm(table_name = "queue_task")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub created_date: DateTime<Utc>,
    pub created_by: String,
    pub modified_date: DateTime<Utc>,
    pub modified_by: String,
    /// The person who asked for the work.
    pub owner_id: Uuid,
    /// Whose permissions the work runs with.
    pub run_as_id: Uuid,
    /// The registered executor that runs it.
    pub execution_component_name: String,
    /// The requested unit of work; never changed after enqueue.
    pub execution_spec: Json,
    /// The executor's checkpoint, committed together with each batch of work.
    pub execution_state: Json,
    pub workflow_status: TaskStatus,
    /// Error code or detail for ERROR, FAILURE, ABANDONED and retries; for admins only.
    pub workflow_status_desc: Option<String>,
    /// Not runnable before this.
    pub run_at: DateTime<Utc>,
    /// Higher runs first; FIFO (run_at, then id) within a priority.
    pub priority: i32,
    /// The attempt running now or last run (0 before the first claim).
    pub attempt: i32,
    pub max_attempts: i32,
    /// Unique among non-terminal tasks when set.
    pub unique_key: Option<String>,
    pub scheduling_started_date: Option<DateTime<Utc>>,
    /// The node incarnation that holds (or last held) the task.
    pub scheduled_by_process: Option<String>,
    pub execution_started_date: Option<DateTime<Utc>>,
    pub workflow_stopped_date: Option<DateTime<Utc>>,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
    /// Bumped by every claim and every transition; guards every write of a worker.
    pub lease_version: i64,
    /// How many times a node died while running it (rescues); an admin retry resets it.
    pub crash_count: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::task_event::Entity")]
    Events,
}

impl Related<super::task_event::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Events.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
