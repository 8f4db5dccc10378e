//! `queue_node`: one row per node incarnation, refreshed by its heartbeat. The rescuer treats
//! tasks held by a node without a fresh heartbeat as orphaned.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::Serialize;

/// A node incarnation.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize)]
#[sea_orm(table_name = "queue_node")]
pub struct Model {
    /// `<system_id>-<startup timestamp>`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub node_id: String,
    /// The configured identity of the machine or service; shared by all its incarnations, so
    /// a restarted node can recognise (and rescue) what its previous incarnation held.
    pub system_id: String,
    pub started_date: DateTime<Utc>,
    pub heartbeat_date: DateTime<Utc>,
    /// The machine it runs on.
    pub host: Option<String>,
    pub pid: Option<i32>,
    /// The software version it runs.
    pub version: Option<String>,
    /// Executor slots: tasks it runs at once at most.
    pub worker_slots: i32,
    /// Tasks it was running at its last heartbeat.
    pub tasks_running: i32,
    /// Set when it shut down cleanly (its tasks were handed back); kept until pruned.
    pub stopped_date: Option<DateTime<Utc>>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
