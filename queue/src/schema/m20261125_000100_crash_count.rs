//! `queue_task.crash_count`: how many times a node died while running the task. The rescuer
//! parks a task at FAILURE once it reaches the runtime's `park_after_crashes`, so a task that
//! kills its worker (a stack overflow, an abort) is not handed to node after node until the
//! whole cluster is down.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("queue_task")
                    .add_column(
                        ColumnDef::new("crash_count")
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("queue_task")
                    .drop_column("crash_count")
                    .to_owned(),
            )
            .await
    }
}
