//! A staff user watching a person: a personal bookmark behind the "watched by me" filter.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "person_watch")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub staff_user_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub person_id: Uuid,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
