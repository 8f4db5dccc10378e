//! Early alerts and the coaches told of them:
//! - `alert_reason`: the reasons an alert may give, a list admins manage (retired reasons
//!   stay for the alerts that gave them);
//! - `early_alert`: one per person per task (`(task_id, person_id)` unique), open until
//!   closed, with the coach the person had when it was raised;
//! - `coach_notice`: the one email a task sends each coach (`(task_id, coach_id)` key), so a
//!   task run again after a crash never tells a coach twice;
//! - `staff_user.email`: where a staff user is told things.

use sea_orm_migration::{prelude::*, schema::*};

use crate::execute_all;

/// The reasons every installation starts with: (code, name), in pick-list order.
const ALERT_REASONS: [(&str, &str); 5] = [
    ("MISSING_ASSIGNMENTS", "Missing assignments"),
    ("LOW_GRADES", "Low grades"),
    ("POOR_ATTENDANCE", "Poor attendance"),
    ("NOT_ENGAGED", "Not engaged in class"),
    ("PERSONAL", "Personal circumstances"),
];

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .add_column(string_null("email"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("alert_reason")
                    .col(string_len("code", 32).primary_key())
                    .col(string("name"))
                    .col(integer("sort_order"))
                    .col(timestamp_with_time_zone_null("retired_at"))
                    .to_owned(),
            )
            .await?;
        let mut reasons = Query::insert();
        reasons
            .into_table("alert_reason")
            .columns(["code", "name", "sort_order"]);
        for (sort_order, (code, name)) in ALERT_REASONS.iter().enumerate() {
            reasons.values_panic([(*code).into(), (*name).into(), (sort_order as i32).into()]);
        }
        manager.exec_stmt(reasons).await?;
        manager
            .create_table(
                Table::create()
                    .table("early_alert")
                    .col(pk_uuid("id"))
                    .col(uuid("person_id"))
                    .col(uuid("task_id"))
                    .col(uuid_null("coach_id"))
                    .col(string("course"))
                    // Reason codes, comma-separated (codes are capital letters and `_`).
                    .col(string("reasons"))
                    .col(text("suggestion"))
                    .col(text("comment"))
                    .col(uuid("raised_by"))
                    .col(timestamp_with_time_zone("raised_at"))
                    .col(uuid_null("closed_by"))
                    .col(timestamp_with_time_zone_null("closed_at"))
                    .foreign_key(
                        ForeignKey::create()
                            .from("early_alert", "person_id")
                            .to("person", "id")
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_early_alert_task_person")
                    .table("early_alert")
                    .col("task_id")
                    .col("person_id")
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("coach_notice")
                    .col(uuid("task_id"))
                    .col(uuid("coach_id"))
                    // sending | sent | deferred | failed | no_address
                    .col(string_len("status", 16))
                    .col(integer("attempts"))
                    .col(text_null("detail"))
                    .col(timestamp_with_time_zone("updated_at"))
                    .primary_key(Index::create().col("task_id").col("coach_id"))
                    .to_owned(),
            )
            .await?;
        // The "has open alerts" filter and the caseload's count read open alerts only.
        execute_all(
            manager,
            [
                "CREATE INDEX idx_early_alert_open ON early_alert (person_id) \
              WHERE closed_at IS NULL"
                    .to_string(),
            ],
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in ["coach_notice", "early_alert", "alert_reason"] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table("staff_user")
                    .drop_column("email")
                    .to_owned(),
            )
            .await
    }
}
