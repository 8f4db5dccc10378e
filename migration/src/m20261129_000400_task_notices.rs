//! Owners told when their tasks end, admins when anyone's fails:
//! - `staff_user.task_emails`: `all`, `failures` (the default) or `none`;
//! - `staff_user.failure_alerts`: an admin is emailed of every task that fails;
//! - `task_notice`: one row per task end and person told (`(task_id, ended_at,
//!   recipient_id)` key: a task retried by an admin can end again, and that end is news
//!   too), so a node that runs the job again, or another node, never sends it twice.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .add_column(string_len("task_emails", 16).default("failures"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .add_column(boolean("failure_alerts").default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("task_notice")
                    .col(uuid("task_id"))
                    .col(timestamp_with_time_zone("ended_at"))
                    .col(uuid("recipient_id"))
                    // sending | sent | deferred | failed
                    .col(string_len("status", 16))
                    .col(text_null("detail"))
                    .col(timestamp_with_time_zone("updated_at"))
                    .primary_key(
                        Index::create()
                            .col("task_id")
                            .col("ended_at")
                            .col("recipient_id"),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("task_notice").to_owned())
            .await?;
        for column in ["failure_alerts", "task_emails"] {
            manager
                .alter_table(
                    Table::alter()
                        .table("staff_user")
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
