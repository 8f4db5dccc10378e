//! Sign-in sessions (tower-sessions records), kept in the database so they survive a restart
//! and are shared by every node of a cluster.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("web_session")
                    .col(string_len("id", 64).primary_key())
                    .col(binary("data"))
                    .col(timestamp_with_time_zone("expiry_date"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_web_session_expiry")
                    .table("web_session")
                    .col("expiry_date")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("web_session").to_owned())
            .await
    }
}
