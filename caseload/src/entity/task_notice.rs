//! One end of a task announced to its owner by email, and what became of the message.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_notice")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: Uuid,
    /// The task's `workflow_stopped_date` at the end announced.
    #[sea_orm(primary_key, auto_increment = false)]
    pub ended_at: DateTimeUtc,
    /// `sending`, `sent`, `deferred` or `failed`.
    pub status: String,
    pub detail: Option<String>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
