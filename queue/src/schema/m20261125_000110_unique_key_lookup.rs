//! An index on `queue_task.unique_key` for looking a key up whatever its task's status:
//! idempotent submissions answer a repeated request with the task its key made, even after
//! that task finished. Only keyed tasks enter it (partial), and a key never changes after
//! the insert, so claims and completions still touch no index (see
//! `m20261124_000080_hot_updates`).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "CREATE INDEX idx_queue_task_keyed ON queue_task (unique_key, created_date) \
                 WHERE unique_key IS NOT NULL",
            )
            .await
            .map(drop)
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_queue_task_keyed")
                    .table("queue_task")
                    .to_owned(),
            )
            .await
    }
}
