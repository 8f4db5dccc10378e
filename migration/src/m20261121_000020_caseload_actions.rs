//! What the caseload's bulk actions record (watches, status history, the email send log) and
//! the indexes that keep caseload search fast at a million people.

use sea_orm_migration::sea_orm::DatabaseBackend;
use sea_orm_migration::{prelude::*, schema::*};

/// Case-insensitive prefix search compares `lower(column)`; these columns get such an index.
const PREFIX_SEARCH_COLUMNS: [&str; 4] = ["first_name", "last_name", "school_id", "email"];

/// The text "contains" search looks in, as one lowercased expression over the columns of
/// `row` (`person` or a trigger's `new`). `caseload::store::search` repeats it verbatim:
/// PostgreSQL uses an expression index only for the identical expression. Later migrations
/// (`000021`, `000040`) store the same text, so they use this function.
pub(crate) fn contains_expression(row: &str) -> String {
    format!(
        "lower({row}.first_name || ' ' || {row}.last_name || ' ' || {row}.school_id || ' ' || \
         coalesce({row}.email, ''))"
    )
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("person_watch")
                    .col(uuid("staff_user_id"))
                    .col(uuid("person_id"))
                    .col(timestamp_with_time_zone("created_at"))
                    .primary_key(Index::create().col("staff_user_id").col("person_id"))
                    .foreign_key(&mut cascade("person_watch", "staff_user_id", "staff_user"))
                    .foreign_key(&mut cascade("person_watch", "person_id", "person"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("program_status_change")
                    .col(pk_uuid("id"))
                    .col(uuid("person_id"))
                    .col(string_len("from_status", 32))
                    .col(string_len("to_status", 32))
                    .col(text("reason"))
                    .col(uuid("changed_by"))
                    .col(timestamp_with_time_zone("changed_at"))
                    .col(uuid_null("task_id"))
                    .foreign_key(&mut cascade("program_status_change", "person_id", "person"))
                    .foreign_key(
                        ForeignKey::create()
                            .from("program_status_change", "to_status")
                            .to("program_status", "code"),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from("program_status_change", "changed_by")
                            .to("staff_user", "id"),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table("email_send_log")
                    .col(uuid("task_id"))
                    .col(uuid("person_id"))
                    .col(string("recipient"))
                    .col(string_len("status", 16))
                    .col(text_null("detail"))
                    .col(integer("attempts"))
                    .col(timestamp_with_time_zone("updated_at"))
                    .col(timestamp_with_time_zone_null("sent_at"))
                    // One row per recipient and task: the key that makes "at most once" hold.
                    .primary_key(Index::create().col("task_id").col("person_id"))
                    .foreign_key(&mut cascade("email_send_log", "person_id", "person"))
                    .to_owned(),
            )
            .await?;
        for (name, table, columns, unique) in [
            // A re-run of a batch finds the rows of its first run and records nothing twice.
            (
                "idx_program_status_change_task_person",
                "program_status_change",
                &["task_id", "person_id"][..],
                true,
            ),
            (
                "idx_program_status_change_person",
                "program_status_change",
                &["person_id", "changed_at"][..],
                false,
            ),
            (
                "idx_person_watch_person",
                "person_watch",
                &["person_id"][..],
                false,
            ),
            // "My caseload" in one status is counted from the index alone.
            (
                "idx_person_coach_status",
                "person",
                &["coach_id", "program_status"][..],
                false,
            ),
            (
                "idx_email_send_log_status",
                "email_send_log",
                &["task_id", "status"][..],
                false,
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table(table);
            for column in columns {
                index.col(*column);
            }
            if unique {
                index.unique();
            }
            manager.create_index(index.to_owned()).await?;
        }
        crate::execute_all(manager, search_index_sql(manager.get_database_backend())).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for column in PREFIX_SEARCH_COLUMNS {
            db.execute_unprepared(&format!("DROP INDEX IF EXISTS idx_person_lower_{column}"))
                .await?;
        }
        let contains = match manager.get_database_backend() {
            DatabaseBackend::Postgres => "DROP INDEX IF EXISTS idx_person_contains",
            // The triggers belong to `person`, which outlives this migration: drop them.
            _ => {
                for trigger in ["insert", "delete", "update"] {
                    db.execute_unprepared(&format!(
                        "DROP TRIGGER IF EXISTS person_contains_{trigger}"
                    ))
                    .await?;
                }
                "DROP TABLE IF EXISTS person_contains"
            }
        };
        db.execute_unprepared(contains).await?;
        for table in ["email_send_log", "program_status_change", "person_watch"] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

/// A foreign key whose rows go away with the row they point to.
fn cascade(
    table: &'static str,
    column: &'static str,
    target: &'static str,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from(table, column)
        .to(target, "id")
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

/// Expression indexes for search, which SeaQuery's schema builder cannot express.
///
/// - Prefix search: search adds a range on `lower(col)` next to its LIKE (see
///   `caseload::store::search::sql::starts_with` for why), which these indexes serve; on
///   PostgreSQL in the "C" collation, so that the range is byte order whatever the database's
///   collation.
/// - "Contains" search: PostgreSQL's pg_trgm GIN index answers `LIKE '%abc%'` (a trusted
///   extension since PostgreSQL 13, so the database owner may create it). SQLite gets an FTS5
///   table with the trigram tokenizer, keyed by the person's rowid and kept current by
///   triggers; it stores no copy of the text (`content=''`), and `contentless_delete` lets
///   the triggers delete by rowid.
fn search_index_sql(backend: DatabaseBackend) -> Vec<String> {
    let mut statements: Vec<String> = Vec::new();
    let collation = match backend {
        DatabaseBackend::Postgres => {
            statements.push("CREATE EXTENSION IF NOT EXISTS pg_trgm".into());
            statements.push(format!(
                "CREATE INDEX idx_person_contains ON person USING gin (({}) gin_trgm_ops)",
                contains_expression("person")
            ));
            " COLLATE \"C\""
        }
        _ => {
            let text = contains_expression("new");
            statements.extend([
                "CREATE VIRTUAL TABLE person_contains USING fts5(text, content='', \
                 contentless_delete=1, tokenize='trigram', detail='none')"
                    .to_owned(),
                format!(
                    "CREATE TRIGGER person_contains_insert AFTER INSERT ON person BEGIN \
                     INSERT INTO person_contains (rowid, text) VALUES (new.rowid, {text}); END"
                ),
                "CREATE TRIGGER person_contains_delete AFTER DELETE ON person BEGIN \
                 DELETE FROM person_contains WHERE rowid = old.rowid; END"
                    .to_owned(),
                format!(
                    "CREATE TRIGGER person_contains_update \
                     AFTER UPDATE OF first_name, last_name, school_id, email ON person BEGIN \
                     DELETE FROM person_contains WHERE rowid = old.rowid; \
                     INSERT INTO person_contains (rowid, text) VALUES (new.rowid, {text}); END"
                ),
            ]);
            ""
        }
    };
    for column in PREFIX_SEARCH_COLUMNS {
        statements.push(format!(
            "CREATE INDEX idx_person_lower_{column} ON person ((lower({column}){collation}))"
        ));
    }
    statements
}
