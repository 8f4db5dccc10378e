//! The dashboard's bell: `staff_user.notices_seen_at`, when the user last opened it; the
//! ends of their tasks after it are unread.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .add_column(timestamp_with_time_zone_null("notices_seen_at"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .drop_column("notices_seen_at")
                    .to_owned(),
            )
            .await
    }
}
