//! The `RETIRED` program status: where people go who left the school's records. Nobody with
//! history is deleted, so retiring a person is a status change like any other.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut insert = Query::insert();
        insert
            .into_table("program_status")
            .columns(["code", "name", "sort_order"])
            .values_panic(["RETIRED".into(), "Retired".into(), 100.into()])
            .on_conflict(OnConflict::column("code").do_nothing().to_owned());
        manager.exec_stmt(insert).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut delete = Query::delete();
        delete
            .from_table("program_status")
            .and_where(Expr::col("code").eq("RETIRED"));
        manager.exec_stmt(delete).await
    }
}
