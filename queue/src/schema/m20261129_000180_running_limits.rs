//! Per-component limits on running tasks, held across the cluster: `queue_component_slot`,
//! one row per task holding one of its component's places, with the lease it holds it
//! under, so a place whose task has moved on (finished, rescued, claimed again) is free.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("queue_component_slot")
                    .col(uuid("task_id").primary_key())
                    .col(string_len("component", 128))
                    .col(big_integer("lease_version"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_queue_component_slot_component")
                    .table("queue_component_slot")
                    .col("component")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("queue_component_slot").to_owned())
            .await
    }
}
