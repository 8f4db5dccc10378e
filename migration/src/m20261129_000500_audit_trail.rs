//! The audit trail: `audit_event`, one row per admin act on tasks or periodic jobs, pause,
//! and change to users, roles, tokens, people and alert reasons. Its id is a UUID v7, so
//! newest first is id order; `at` bounds the Audit page's days and the retention's delete;
//! who and area each have an index for the page's filters.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("audit_event")
                    .col(uuid("id").primary_key())
                    .col(timestamp_with_time_zone("at"))
                    .col(uuid_null("actor_id"))
                    .col(string_len("actor", 160))
                    .col(string_len("area", 32))
                    .col(string_len("act", 48))
                    .col(text("targets"))
                    .col(big_integer("target_count"))
                    .col(text("detail"))
                    .col(string_len("client", 64))
                    .to_owned(),
            )
            .await?;
        for (name, columns) in [
            ("idx_audit_event_at", &["at"][..]),
            ("idx_audit_event_actor", &["actor", "id"][..]),
            ("idx_audit_event_area", &["area", "id"][..]),
        ] {
            let mut index = Index::create();
            index.name(name).table("audit_event");
            for column in columns {
                index.col(*column);
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("audit_event").to_owned())
            .await
    }
}
