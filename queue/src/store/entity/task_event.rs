//! `queue_task_event`: the history of a task, one row per transition (with the attempt's
//! error, if any), for the task detail page and for audits.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::Serialize;

use crate::state::TaskStatus;

/// One entry of a task's history.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize)]
#[sea_orm(table_name = "queue_task_event")]
pub struct Model {
    /// Time-ordered (UUID v7), so the history sorts by id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub task_id: Uuid,
    pub occurred_date: DateTime<Utc>,
    /// The status the task moved to.
    pub status: TaskStatus,
    /// The task's attempt counter after the move.
    pub attempt: i32,
    /// The error of the attempt, the reason of an admin, or other detail.
    pub message: Option<String>,
    /// Who made the move: a node id for the queue itself, the caller's name for enqueues and
    /// admin operations.
    pub actor: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::task::Entity",
        from = "Column::TaskId",
        to = "super::task::Column::Id",
        on_delete = "Cascade"
    )]
    Task,
}

impl Related<super::task::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Task.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
