//! PostgreSQL: `queue_watcher`, the stores that have subscribers to task events right now
//! (see `store::watchers`). A claim or a completion announces its tasks to the other nodes
//! only while some other store is listed, so a cluster that nobody watches spends nothing
//! on notifications. SQLite has one node, which publishes in-process and announces nothing.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// A store's event origin (`EventBus::origin`) and when its entry lapses unless refreshed:
/// a process that dies while watched stops costing announcements then.
const CREATE: &str = "CREATE TABLE queue_watcher ( \
     origin UUID PRIMARY KEY, \
     expires_date TIMESTAMPTZ NOT NULL)";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        manager.get_connection().execute_unprepared(CREATE).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        manager
            .get_connection()
            .execute_unprepared("DROP TABLE queue_watcher")
            .await?;
        Ok(())
    }
}
