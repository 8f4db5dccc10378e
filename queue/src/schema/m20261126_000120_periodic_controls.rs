//! What admins see and steer of a periodic job: whether it is paused, the lock times it
//! declares (so Queue health can show them), and the runs it skipped because a run, or a
//! lock kept for at least its `lock_at_least_for`, still held its scheduler lock.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The new columns. SQLite alters one column per statement.
fn columns() -> [ColumnDef; 5] {
    [
        ColumnDef::new("paused")
            .boolean()
            .not_null()
            .default(false)
            .to_owned(),
        ColumnDef::new("lock_at_most_ms")
            .big_integer()
            .null()
            .to_owned(),
        ColumnDef::new("lock_at_least_ms")
            .big_integer()
            .null()
            .to_owned(),
        ColumnDef::new("skipped_runs")
            .big_integer()
            .not_null()
            .default(0)
            .to_owned(),
        ColumnDef::new("last_skipped_at")
            .timestamp_with_time_zone()
            .null()
            .to_owned(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for mut column in columns() {
            manager
                .alter_table(
                    Table::alter()
                        .table("queue_periodic_job")
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in columns() {
            manager
                .alter_table(
                    Table::alter()
                        .table("queue_periodic_job")
                        .drop_column(column.get_column_name())
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
