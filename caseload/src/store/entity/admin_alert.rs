//! One kind of admins' alert about the queue itself, and its current episode.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "admin_alert")]
pub struct Model {
    /// The alert's kind, e.g. `queue_backlog`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    /// When the current (or last) episode was raised.
    pub raised_at: DateTimeUtc,
    /// When it passed; `None` while it lasts.
    pub cleared_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
