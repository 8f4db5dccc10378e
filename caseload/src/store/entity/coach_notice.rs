//! The one email a task sends a coach about their people, and what became of it.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "coach_notice")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub coach_id: Uuid,
    /// `sending`, `sent`, `deferred`, `failed` or `no_address`.
    pub status: String,
    pub attempts: i32,
    /// Why it failed or was deferred.
    pub detail: Option<String>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
