//! The queue's schema migrations, for the host application's `Migrator`.
//!
//! The queue is a library, so it ships its tables as ordinary `MigrationTrait` values instead
//! of owning a migrator: the application lists each of them (or all of [`migrations()`]) in
//! its own migrator, after its earlier migrations, and applies everything in one place. A
//! new queue migration must be appended there too.

use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend};
use sea_orm_migration::{DbErr, MigrationTrait, SchemaManager};

pub mod m20261121_000010_create_queue;
pub mod m20261121_000030_queue_scheduler;
pub mod m20261122_000050_drop_running_index;
pub mod m20261124_000060_task_counts;
pub mod m20261124_000070_ready_table;
pub mod m20261124_000080_hot_updates;
pub mod m20261124_000090_steady_plans;
pub mod m20261125_000100_crash_count;
pub mod m20261125_000110_unique_key_lookup;
pub mod m20261126_000120_periodic_controls;
pub mod m20261126_000130_task_watchers;
pub mod m20261127_000140_counted_claims;
pub mod m20261128_000150_pages_a_third_full;
pub mod m20261128_000160_derived_columns_kept_by_triggers;
pub mod m20261129_000170_owner_turns;
pub mod m20261129_000180_running_limits;
pub mod m20261207_001200_claims_by_quota;
pub mod m20261208_001300_claims_past_taken_entries;

/// Every migration of the queue, in the order they apply.
pub fn migrations() -> Vec<Box<dyn MigrationTrait>> {
    vec![
        Box::new(m20261121_000010_create_queue::Migration),
        Box::new(m20261121_000030_queue_scheduler::Migration),
        Box::new(m20261122_000050_drop_running_index::Migration),
        Box::new(m20261124_000060_task_counts::Migration),
        Box::new(m20261124_000070_ready_table::Migration),
        Box::new(m20261124_000080_hot_updates::Migration),
        Box::new(m20261124_000090_steady_plans::Migration),
        Box::new(m20261125_000100_crash_count::Migration),
        Box::new(m20261125_000110_unique_key_lookup::Migration),
        Box::new(m20261126_000120_periodic_controls::Migration),
        Box::new(m20261126_000130_task_watchers::Migration),
        Box::new(m20261127_000140_counted_claims::Migration),
        Box::new(m20261128_000150_pages_a_third_full::Migration),
        Box::new(m20261128_000160_derived_columns_kept_by_triggers::Migration),
        Box::new(m20261129_000170_owner_turns::Migration),
        Box::new(m20261129_000180_running_limits::Migration),
        Box::new(m20261207_001200_claims_by_quota::Migration),
        Box::new(m20261208_001300_claims_past_taken_entries::Migration),
    ]
}

/// Runs `statements` in order on PostgreSQL; a migration of PostgreSQL's functions and
/// settings has nothing to do on SQLite.
async fn on_postgres(manager: &SchemaManager<'_>, statements: &[&str]) -> Result<(), DbErr> {
    if manager.get_database_backend() != DatabaseBackend::Postgres {
        return Ok(());
    }
    let db = manager.get_connection();
    for sql in statements {
        db.execute_unprepared(sql).await?;
    }
    Ok(())
}

/// A migrator holding only the queue's migrations: for the queue's own tests and for services
/// that use the queue without migrations of their own.
pub struct QueueMigrator;

#[sea_orm_migration::async_trait::async_trait]
impl sea_orm_migration::MigratorTrait for QueueMigrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        migrations()
    }
}
