//! Admins' alerts of the queue's own state: `admin_alert`, one row per kind of alert
//! (`queue_backlog`) with when it was last raised and, once the condition passed, cleared.
//! Raising is a conditional write, so whichever node looks first raises it, once per
//! episode.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("admin_alert")
                    .col(string_len("key", 64).primary_key())
                    .col(timestamp_with_time_zone("raised_at"))
                    .col(timestamp_with_time_zone_null("cleared_at"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("admin_alert").to_owned())
            .await
    }
}
