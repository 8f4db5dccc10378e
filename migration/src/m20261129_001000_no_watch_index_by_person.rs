//! Drops `idx_person_watch_person`, the index of watches by person. No query reads watches
//! by person: every one asks for a user's own (the primary key's leading column). It served
//! only the cascade of a deleted person, and people are retired, never deleted. Each new
//! watch wrote an entry into it beside the other users' watches of the same person, which
//! on a large table is a page of its own per watch (ADR 0082).

use sea_orm_migration::prelude::*;

const INDEX: &str = "idx_person_watch_person";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table("person_watch").to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table("person_watch")
                    .col("person_id")
                    .to_owned(),
            )
            .await
    }
}
