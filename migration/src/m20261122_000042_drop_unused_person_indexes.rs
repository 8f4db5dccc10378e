//! Drops two indexes of `person` that no query needs any more, because every index is one
//! more entry to write per changed person. On PostgreSQL a status change rewrites each
//! person's row outside HOT (`program_status` is indexed), so it inserts into every index of
//! the table; these two were 2 of 13.
//!
//! - `idx_person_first_name`: searches compare `lower(first_name)` through
//!   `idx_person_search_first_name`, and no listing sorts by first name alone.
//! - `idx_person_coach`: `coach_id` leads `idx_person_coach_name` and
//!   `idx_person_coach_status`, which serve every "my caseload" filter and count.

use sea_orm_migration::prelude::*;

/// `(index, columns)` as `m20261121_000001_create_caseload` created them.
const INDEXES: [(&str, &str); 2] = [
    ("idx_person_first_name", "first_name"),
    ("idx_person_coach", "coach_id"),
];

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, _) in INDEXES {
            manager
                .drop_index(Index::drop().name(name).table("person").to_owned())
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, column) in INDEXES {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table("person")
                        .col(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
