//! The program statuses a person can be in (Active, Graduated, ...).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "program_status")]
pub struct Model {
    /// Stable code stored on people and sent over the API (e.g. `ACTIVE`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub code: String,
    /// The name shown to staff.
    pub name: String,
    /// Position in pick lists.
    pub sort_order: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
