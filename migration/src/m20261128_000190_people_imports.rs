//! CSV imports of people: the uploaded file in chunks (so any node can run the import and
//! a backup holds it), the school ids each import has claimed (a repeat is a problem; a
//! full sync retires the rest), and each import's rows that could not be imported.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("people_import")
                    .col(pk_uuid("id"))
                    .col(uuid("created_by"))
                    .col(timestamp_with_time_zone("created_at"))
                    .col(string("file_name"))
                    .col(big_integer("byte_size"))
                    // Every chunk is stored: the file can be previewed and imported.
                    .col(boolean("finished"))
                    // The import task that took the file; none while it is only previewed.
                    .col(uuid_null("task_id"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("people_import_chunk")
                    .col(uuid("import_id"))
                    .col(big_integer("seq"))
                    .col(binary("data"))
                    .primary_key(Index::create().col("import_id").col("seq"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("people_import_seen")
                    .col(uuid("import_id"))
                    .col(string_len("school_id", 32))
                    .primary_key(Index::create().col("import_id").col("school_id"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("people_import_problem")
                    .col(uuid("import_id"))
                    .col(big_integer("line"))
                    .col(text_null("school_id"))
                    .col(text("message"))
                    .primary_key(Index::create().col("import_id").col("line"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            "people_import_problem",
            "people_import_seen",
            "people_import_chunk",
            "people_import",
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
