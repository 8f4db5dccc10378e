//! `queue_task_count`: how many tasks each component has in each status, as deltas that the
//! triggers on `queue_task` add per database session (`shard`); the sum over the shards of
//! a (component, status) is its count (see `m20261124_000060_task_counts`).

use sea_orm::entity::prelude::*;

use crate::state::TaskStatus;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "queue_task_count")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub component: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub status: TaskStatus,
    #[sea_orm(primary_key, auto_increment = false)]
    pub shard: i32,
    pub tasks: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
