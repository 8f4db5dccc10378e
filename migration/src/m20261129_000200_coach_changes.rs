//! `coach_change`: every move of a person to another coach, with the task that made it; a
//! coach reassignment records each person once per task (`(task_id, person_id)` unique).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("coach_change")
                    .col(pk_uuid("id"))
                    .col(uuid("person_id"))
                    .col(uuid_null("from_coach_id"))
                    .col(uuid("to_coach_id"))
                    .col(uuid("changed_by"))
                    .col(timestamp_with_time_zone("changed_at"))
                    .col(uuid_null("task_id"))
                    .foreign_key(
                        ForeignKey::create()
                            .from("coach_change", "person_id")
                            .to("person", "id")
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from("coach_change", "to_coach_id")
                            .to("staff_user", "id"),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from("coach_change", "changed_by")
                            .to("staff_user", "id"),
                    )
                    .to_owned(),
            )
            .await?;
        for (name, columns, unique) in [
            // A re-run of a batch finds the rows of its first run and moves nobody twice.
            (
                "idx_coach_change_task_person",
                &["task_id", "person_id"][..],
                true,
            ),
            (
                "idx_coach_change_person",
                &["person_id", "changed_at"][..],
                false,
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table("coach_change");
            for column in columns {
                index.col(*column);
            }
            if unique {
                index.unique();
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table("coach_change").to_owned())
            .await
    }
}
