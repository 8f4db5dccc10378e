//! One end of a task announced by email to one person (its owner, or an admin alerted of
//! failures), and what became of the message.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_notice")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: Uuid,
    /// The task's `workflow_stopped_date` at the end announced.
    #[sea_orm(primary_key, auto_increment = false)]
    pub ended_at: DateTimeUtc,
    /// Who is told: the owner, or an admin alerted of failures.
    #[sea_orm(primary_key, auto_increment = false)]
    pub recipient_id: Uuid,
    /// `sending`, `sent`, `deferred` or `failed`.
    pub status: String,
    pub detail: Option<String>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
