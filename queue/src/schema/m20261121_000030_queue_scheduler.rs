//! The cluster's scheduler lock (ShedLock's table), the periodic jobs' registry, and what a
//! node tells the cluster about itself (host, pid, version, slots, load, clean stop).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Columns added to `queue_node`, one ALTER each (SQLite adds one column per statement).
fn node_columns() -> Vec<ColumnDef> {
    vec![
        string_len_null("host", 255),
        integer_null("pid"),
        string_len_null("version", 64),
        integer("worker_slots").default(0).to_owned(),
        integer("tasks_running").default(0).to_owned(),
        timestamp_with_time_zone_null("stopped_date"),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for mut column in node_columns() {
            manager
                .alter_table(
                    Table::alter()
                        .table("queue_node")
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table("queue_scheduler_lock")
                    .col(string_len("name", 128).primary_key())
                    .col(timestamp_with_time_zone("lock_until"))
                    .col(timestamp_with_time_zone("locked_at"))
                    .col(string_len("locked_by", 160))
                    // Changes with every acquisition: extending or releasing names the grant
                    // by it, so a holder whose lock expired and was taken by someone else
                    // can never extend or release the new holder's lock.
                    .col(uuid("grant_id"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("queue_periodic_job")
                    .col(string_len("name", 128).primary_key())
                    .col(string_len("schedule", 128))
                    .col(timestamp_with_time_zone_null("next_run_at"))
                    .col(timestamp_with_time_zone_null("last_due_at"))
                    .col(timestamp_with_time_zone_null("last_started_at"))
                    .col(timestamp_with_time_zone_null("last_finished_at"))
                    .col(text_null("last_result"))
                    .col(string_len_null("last_node", 160))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in node_columns() {
            manager
                .alter_table(
                    Table::alter()
                        .table("queue_node")
                        .drop_column(column.get_column_name())
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table("queue_periodic_job").to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table("queue_scheduler_lock").to_owned())
            .await
    }
}
