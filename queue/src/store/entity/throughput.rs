//! `queue_throughput`: tasks that reached COMPLETED in each minute (counted from the Unix
//! epoch), as deltas per database session like `queue_task_count`'s.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "queue_throughput")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub minute: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub shard: i32,
    pub completed: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
