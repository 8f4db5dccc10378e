//! Indexes `early_alert` by person. A person's alerts (open and closed, on their page) and
//! the tasks that touched a person (the task explorer's `person` filter, which reads an
//! alert task's raised people from `early_alert` itself, ADR 0084) are read by person; the
//! only index by person held open alerts alone, so both read every alert ever raised.

use sea_orm_migration::prelude::*;

const INDEX: &str = "idx_early_alert_person";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table("early_alert")
                    .col("person_id")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table("early_alert").to_owned())
            .await
    }
}
