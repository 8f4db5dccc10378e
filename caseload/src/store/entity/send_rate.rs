//! A token bucket every node draws from: how many sends are left, as of when.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "send_rate")]
pub struct Model {
    /// What is limited, e.g. `smtp`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// Tokens left at `refilled_at`.
    pub tokens: f64,
    pub refilled_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
