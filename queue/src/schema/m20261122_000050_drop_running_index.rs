//! Drops `idx_queue_task_running`, because every claim inserted an entry into it: a claim
//! rewrites the task row outside HOT on PostgreSQL (`workflow_status` is indexed), so it
//! writes into every index whose predicate the new row meets, and this was one of four.
//! The rescuer, its only reader, finds the running tasks through
//! `idx_queue_task_status_component` instead (`workflow_status IN ('SCHEDULING',
//! 'EXECUTING')`), which reaches the same few rows; it then tests their node against the live
//! ones, which no index on `scheduled_by_process` could do for a `NOT IN` anyway.

use sea_orm_migration::prelude::*;

use super::m20261121_000010_create_queue::RUNNING_INDEX;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_queue_task_running")
                    .table("queue_task")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(RUNNING_INDEX)
            .await
            .map(drop)
    }
}
