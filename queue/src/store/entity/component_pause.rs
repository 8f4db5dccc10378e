//! `queue_component_pause`: components whose tasks no node claims. A table rather than node
//! memory, so a pause holds across restarts and for every node of a cluster.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::Serialize;

/// A paused component.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize)]
#[sea_orm(table_name = "queue_component_pause")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub component: String,
    pub paused_date: DateTime<Utc>,
    pub paused_by: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
