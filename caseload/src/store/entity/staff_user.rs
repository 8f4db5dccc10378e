//! A staff user: signs in to the dashboard, coaches people, submits bulk actions.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "staff_user")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    #[sea_orm(unique)]
    pub username: String,
    pub display_name: String,
    /// `staff` or `admin`; see [`crate::users::Role`].
    pub role: String,
    /// An argon2 PHC string; the password itself is never stored.
    pub password_hash: String,
    pub created_at: DateTimeUtc,
    /// When an admin disabled the account; a disabled user cannot sign in or act.
    pub disabled_at: Option<DateTimeUtc>,
    /// Set by a password reset: the next sign-in must choose a new password first.
    pub must_change_password: bool,
    /// Where the user is told things (coach notices); `None`: they are not emailed.
    pub email: Option<String>,
    /// Which of their tasks' ends they are emailed about: `all`, `failures` or `none`.
    pub task_emails: String,
    /// An admin emailed of every task that fails, whoever owns it.
    pub failure_alerts: bool,
    /// When they last opened the dashboard's bell: their tasks' ends after it are unread.
    pub notices_seen_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
