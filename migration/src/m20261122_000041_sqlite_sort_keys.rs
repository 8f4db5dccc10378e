//! SQLite's "contains" search reads each match's sort key from a narrow table of its own,
//! `person_sort_key` (person's rowid, last name, first name, id), instead of from the FTS5
//! table.
//!
//! `m20261121_000021` stored the sort key in `person_contains` itself (UNINDEXED columns of
//! a `contentless_unindexed` table). The FTS5 index finds a broad search's matches quickly,
//! but FTS5 hands out each stored column through a statement of its own per row, so reading
//! the matches' sort keys cost far more than finding them. The same keys, looked up by rowid
//! in an ordinary table of only those columns, cost much less (ADR 0020). The FTS5 table
//! keeps the phrase index and nothing else.
//!
//! Kept current by triggers, like `person_contains`: on insert, on delete, and on updates
//! of the names (a status change does not touch it). PostgreSQL is unchanged: its
//! `person_contains` is an ordinary table that holds the sort key already
//! (`m20261121_000040`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use crate::m20261121_000021_search_indexes::{CONTAINS_AFTER, ContainsTable, rebuild_contains};

/// `person_contains` as a phrase index only: rowids, positions, no stored columns.
const CONTAINS_PHRASES: ContainsTable = ContainsTable {
    stored: &[],
    options: "content='', contentless_delete=1, \
              tokenize='trigram case_sensitive 1', detail='full'",
};

/// The triggers keeping `person_sort_key` current.
const TRIGGERS: [&str; 3] = [
    "person_sort_key_insert",
    "person_sort_key_delete",
    "person_sort_key_update",
];

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let columns = "rid, last_name, first_name, id";
        let row = |row: &str| format!("{row}.rowid, {row}.last_name, {row}.first_name, {row}.id");
        let mut statements = vec![
            "CREATE TABLE person_sort_key (\
                 rid INTEGER PRIMARY KEY, \
                 last_name TEXT NOT NULL, \
                 first_name TEXT NOT NULL, \
                 id BLOB NOT NULL)"
                .to_owned(),
            format!(
                "INSERT INTO person_sort_key ({columns}) SELECT {} FROM person",
                row("person")
            ),
            format!(
                "CREATE TRIGGER person_sort_key_insert AFTER INSERT ON person BEGIN \
                 INSERT INTO person_sort_key ({columns}) VALUES ({}); END",
                row("new")
            ),
            "CREATE TRIGGER person_sort_key_delete AFTER DELETE ON person BEGIN \
             DELETE FROM person_sort_key WHERE rid = old.rowid; END"
                .to_owned(),
            "CREATE TRIGGER person_sort_key_update \
             AFTER UPDATE OF first_name, last_name ON person BEGIN \
             UPDATE person_sort_key SET last_name = new.last_name, first_name = new.first_name \
             WHERE rid = new.rowid; END"
                .to_owned(),
        ];
        statements.extend(rebuild_contains(&CONTAINS_PHRASES));
        crate::execute_all(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let mut statements = crate::drop_triggers(&TRIGGERS);
        statements.push("DROP TABLE person_sort_key".to_owned());
        statements.extend(rebuild_contains(&CONTAINS_AFTER));
        crate::execute_all(manager, statements).await
    }
}
