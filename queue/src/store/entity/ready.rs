//! `queue_ready`: one entry per QUEUED task, in claim order, kept by triggers on
//! `queue_task` (see `m20261124_000070_ready_table`). Read only; no code writes it.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "queue_ready")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: Uuid,
    pub priority: i32,
    pub run_at: DateTime<Utc>,
    pub component: String,
    /// Whose task it is: claims take turns among owners (`m20261129_000170_owner_turns`).
    pub owner_id: Uuid,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
