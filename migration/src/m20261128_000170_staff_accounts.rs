//! Staff accounts an organisation runs: users that can be disabled and made to change their
//! password, sessions that know their user (so disabling ends them), sign-in limits shared by
//! every node, the key that signs known-device cookies, and personal API tokens.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite alters one column per statement.
        for column in [
            timestamp_with_time_zone_null("disabled_at"),
            boolean("must_change_password").default(false).to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table("staff_user")
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table("web_session")
                    .add_column(uuid_null("user_id"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_web_session_user")
                    .table("web_session")
                    .col("user_id")
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("sign_in_limit")
                    .col(text("key").primary_key())
                    // When the key's allowance is whole again, in milliseconds since the epoch.
                    .col(big_integer("free_at"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("server_secret")
                    .col(string_len("name", 64).primary_key())
                    .col(binary("value"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("api_token")
                    .col(pk_uuid("id"))
                    .col(uuid("user_id"))
                    .col(string("name"))
                    .col(string_len_uniq("token_hash", 64))
                    .col(boolean("can_act"))
                    .col(timestamp_with_time_zone("created_at"))
                    .col(timestamp_with_time_zone_null("expires_at"))
                    .col(timestamp_with_time_zone_null("last_used_at"))
                    .col(timestamp_with_time_zone_null("revoked_at"))
                    .foreign_key(
                        ForeignKey::create()
                            .from("api_token", "user_id")
                            .to("staff_user", "id"),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_api_token_user")
                    .table("api_token")
                    .col("user_id")
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in ["api_token", "server_secret", "sign_in_limit"] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .drop_index(
                Index::drop()
                    .name("idx_web_session_user")
                    .table("web_session")
                    .to_owned(),
            )
            .await?;
        for (table, column) in [
            ("web_session", "user_id"),
            ("staff_user", "must_change_password"),
            ("staff_user", "disabled_at"),
        ] {
            manager
                .alter_table(Table::alter().table(table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}
