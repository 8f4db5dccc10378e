//! Each person's outcome in each bulk task: `task_outcome`, one row per task and person,
//! keyed by the task (its owner's download reads one task's rows in person order) and
//! indexed by the person ("which tasks touched this person?"). No foreign keys: an unknown
//! id has an outcome too, and rows go when their task is pruned (`caseload::outcomes`).
//! On SQLite the table is `WITHOUT ROWID`: the key is the table, so a row is written to two
//! b-trees, not three.

use sea_orm_migration::sea_orm::DatabaseBackend;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let table = Table::create()
            .table("task_outcome")
            .col(uuid("task_id"))
            .col(uuid("person_id"))
            .col(small_integer("outcome"))
            .primary_key(Index::create().col("task_id").col("person_id"))
            .to_owned();
        if manager.get_database_backend() == DatabaseBackend::Sqlite {
            let sql = table.to_string(SqliteQueryBuilder);
            crate::execute_all(manager, [format!("{sql} WITHOUT ROWID")]).await?;
        } else {
            manager.create_table(table).await?;
        }
        manager
            .create_index(
                Index::create()
                    .name("idx_task_outcome_person")
                    .table("task_outcome")
                    .col("person_id")
                    .col("task_id")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("task_outcome").to_owned())
            .await
    }
}
