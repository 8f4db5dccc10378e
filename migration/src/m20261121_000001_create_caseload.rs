//! The caseload: staff users (who sign in), program statuses and the people staff advise.

use sea_orm_migration::{prelude::*, schema::*};

/// The program statuses every installation starts with: (code, name), in pick-list order.
const PROGRAM_STATUSES: [(&str, &str); 6] = [
    ("ACTIVE", "Active"),
    ("INACTIVE", "Inactive"),
    ("GRADUATED", "Graduated"),
    ("WITHDRAWN", "Withdrawn"),
    ("TRANSFERRED", "Transferred"),
    ("NON_PARTICIPATING", "Non-participating"),
];

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("staff_user")
                    .col(pk_uuid("id"))
                    .col(string_uniq("username"))
                    .col(string("display_name"))
                    .col(string_len("role", 16))
                    .col(string("password_hash"))
                    .col(timestamp_with_time_zone("created_at"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("program_status")
                    .col(string_len("code", 32).primary_key())
                    .col(string("name"))
                    .col(integer("sort_order"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("person")
                    .col(pk_uuid("id"))
                    .col(string_len_uniq("school_id", 32))
                    .col(string("first_name"))
                    .col(string("last_name"))
                    .col(string_null("email"))
                    .col(string_len("program_status", 32))
                    .col(uuid_null("coach_id"))
                    .col(uuid_null("updated_by"))
                    .col(timestamp_with_time_zone("updated_at"))
                    .foreign_key(
                        ForeignKey::create()
                            .from("person", "program_status")
                            .to("program_status", "code"),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from("person", "coach_id")
                            .to("staff_user", "id"),
                    )
                    .to_owned(),
            )
            .await?;
        // Reference data: the statuses every installation starts with.
        let mut statuses = Query::insert();
        statuses
            .into_table("program_status")
            .columns(["code", "name", "sort_order"]);
        for (sort_order, (code, name)) in PROGRAM_STATUSES.iter().enumerate() {
            statuses.values_panic([(*code).into(), (*name).into(), (sort_order as i32).into()]);
        }
        manager.exec_stmt(statuses).await?;
        // The caseload table is always listed in name order; these serve the default sort and
        // the name-prefix search (last name, then first name), plus the "my caseload" filter.
        for (name, columns) in [
            ("idx_person_name", &["last_name", "first_name", "id"][..]),
            ("idx_person_first_name", &["first_name"][..]),
            ("idx_person_coach", &["coach_id"][..]),
            ("idx_person_status", &["program_status"][..]),
        ] {
            let mut index = Index::create();
            index.name(name).table("person");
            for column in columns {
                index.col(*column);
            }
            manager.create_index(index.to_owned()).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in ["person", "program_status", "staff_user"] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
