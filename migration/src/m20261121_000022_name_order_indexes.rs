//! Indexes that hand out a status's or a coach's people already in name order, so a deep
//! page of a broad status ("Graduated") or of a large caseload is read by skipping index
//! entries instead of walking the whole name index and testing each row, which cost time in
//! proportion to the page's depth (ADR 0020).

use sea_orm_migration::prelude::*;

/// `(index, filter column)`; each index is `(filter column, last_name, first_name, id)`,
/// the caseload's sort key after the filter.
const INDEXES: [(&str, &str); 2] = [
    ("idx_person_status_name", "program_status"),
    ("idx_person_coach_name", "coach_id"),
];

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, column) in INDEXES {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table("person")
                        .col(column)
                        .col("last_name")
                        .col("first_name")
                        .col("id")
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, _) in INDEXES {
            manager
                .drop_index(Index::drop().name(name).table("person").to_owned())
                .await?;
        }
        Ok(())
    }
}
