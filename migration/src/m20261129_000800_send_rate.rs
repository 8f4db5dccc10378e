//! `--smtp-rate`: `send_rate`, a token bucket per limited thing (`smtp`), shared by every
//! node: tokens left and when they were last topped up at the rate.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("send_rate")
                    .col(string_len("name", 32).primary_key())
                    .col(double("tokens"))
                    .col(timestamp_with_time_zone("refilled_at"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("send_rate").to_owned())
            .await
    }
}
