//! PostgreSQL: new pages of `queue_task` are filled to a third, not half, so that a task's
//! claim and then its completion each find room for the row's next version in its own page
//! (a HOT update, `m20261124_000080_hot_updates`).
//!
//! At half full, a page's tasks claimed together did not all fit their claimed versions
//! beside the queued ones, and each that did not moved to another page and into every index
//! of the table. A third leaves room for the two versions after the first, which are a
//! little wider (the claiming node and the dates it sets): every claim fits, and a
//! completion needs only the claim's dead versions pruned, which reading the page does
//! (ADR 0007). Pages already written keep their fill; retained tasks take half as much room
//! again.

use sea_orm_migration::prelude::*;

use super::m20261124_000080_hot_updates as hot_updates;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// How full PostgreSQL packs each new page of `queue_task`, in percent.
const FILLFACTOR: u32 = 33;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        super::on_postgres(manager, &[&hot_updates::set_fillfactor(FILLFACTOR)]).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        super::on_postgres(
            manager,
            &[&hot_updates::set_fillfactor(hot_updates::FILLFACTOR)],
        )
        .await
    }
}
