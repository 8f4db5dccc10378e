//! One recipient of a bulk email task and what became of their message.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "email_send_log")]
pub struct Model {
    /// The bulk email task; with `person_id` the primary key, so each person is a recipient
    /// of a task at most once.
    #[sea_orm(primary_key, auto_increment = false)]
    pub task_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub person_id: Uuid,
    /// The address the message went to (the person's address at the time).
    pub recipient: String,
    /// A [`crate::email::SendStatus`] code: `sending`, `sent`, `deferred` or `failed`.
    pub status: String,
    /// The SMTP server's answer or the error, for failed and deferred sends.
    pub detail: Option<String>,
    /// How many times sending was attempted (a deferred send is tried again).
    pub attempts: i32,
    pub updated_at: DateTimeUtc,
    pub sent_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
