//! SQLite: a deep page of one status is found through counted name ranges instead of the
//! status's name-ordered index, which every status change paid for (ADR 0087).
//!
//! `idx_person_status_name` (status, last name, first name, id) let a page 1,000 deep into a
//! broad status skip index entries (`m20261121_000022`), but a status change by id lands at
//! random places of it: about 4,000 of its pages per batch of 5,000 people, most of a status
//! change's cost. In its place:
//! - `person_name_range`: where each range of the name order starts (its first sort key).
//!   Range 0 starts below every person (empty names and an empty id), so every person lies
//!   in exactly one range: the last one starting at or before their sort key.
//! - `person_status_range`: how many people of each status each range holds, kept by
//!   triggers on insert, delete and changes of status or name, in the writer's own
//!   transaction.
//!
//! A page then reads the counts of its status, finds the range where its offset falls and
//! walks the name index from that range's start (`caseload::store::name_ranges`). The
//! migration starts with range 0 holding everyone; the caseload's `name_ranges` job cuts
//! ranges into pieces of about a thousand people in short transactions, on a running node.
//! PostgreSQL is unchanged: no status update there is heap-only while any `person` index
//! holds the status, so the index costs it a smaller share (ADR 0087).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

/// The triggers keeping `person_status_range` current.
const TRIGGERS: [&str; 3] = [
    "person_status_range_insert",
    "person_status_range_delete",
    "person_status_range_update",
];

/// The range holding the person `row` (`new` or `old`): the last one starting at or before
/// their sort key.
fn range_of(row: &str) -> String {
    format!(
        "(SELECT range_no FROM person_name_range \
          WHERE (last_name, first_name, id) <= ({row}.last_name, {row}.first_name, {row}.id) \
          ORDER BY last_name DESC, first_name DESC, id DESC LIMIT 1)"
    )
}

/// Counts the person `row` (`new`) in its range.
fn count_in(row: &str) -> String {
    format!(
        "INSERT INTO person_status_range (program_status, range_no, people) \
         VALUES ({row}.program_status, {}, 1) \
         ON CONFLICT (program_status, range_no) DO UPDATE SET people = people + 1;",
        range_of(row)
    )
}

/// Stops counting the person `row` (`old`) in its range.
fn count_out(row: &str) -> String {
    format!(
        "UPDATE person_status_range SET people = people - 1 \
         WHERE program_status = {row}.program_status AND range_no = {};",
        range_of(row)
    )
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let statements = vec![
            "CREATE TABLE person_name_range (\
                 range_no INTEGER PRIMARY KEY, \
                 last_name TEXT NOT NULL, \
                 first_name TEXT NOT NULL, \
                 id BLOB NOT NULL)"
                .to_owned(),
            "CREATE UNIQUE INDEX idx_person_name_range_start \
             ON person_name_range (last_name, first_name, id)"
                .to_owned(),
            "CREATE TABLE person_status_range (\
                 program_status TEXT NOT NULL, \
                 range_no INTEGER NOT NULL, \
                 people INTEGER NOT NULL, \
                 PRIMARY KEY (program_status, range_no)) WITHOUT ROWID"
                .to_owned(),
            // Splitting a range reads its counts of every status.
            "CREATE INDEX idx_person_status_range_range ON person_status_range (range_no)"
                .to_owned(),
            "INSERT INTO person_name_range (range_no, last_name, first_name, id) \
             VALUES (0, '', '', x'')"
                .to_owned(),
            "INSERT INTO person_status_range (program_status, range_no, people) \
             SELECT program_status, 0, COUNT(*) FROM person GROUP BY program_status"
                .to_owned(),
            format!(
                "CREATE TRIGGER person_status_range_insert AFTER INSERT ON person BEGIN {} END",
                count_in("new")
            ),
            format!(
                "CREATE TRIGGER person_status_range_delete AFTER DELETE ON person BEGIN {} END",
                count_out("old")
            ),
            format!(
                "CREATE TRIGGER person_status_range_update \
                 AFTER UPDATE OF program_status, last_name, first_name ON person \
                 WHEN old.program_status IS NOT new.program_status \
                   OR old.last_name IS NOT new.last_name \
                   OR old.first_name IS NOT new.first_name \
                 BEGIN {} {} END",
                count_out("old"),
                count_in("new")
            ),
            "DROP INDEX idx_person_status_name".to_owned(),
        ];
        crate::execute_all(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let mut statements = crate::drop_triggers(&TRIGGERS);
        statements.extend([
            "DROP TABLE person_status_range".to_owned(),
            "DROP TABLE person_name_range".to_owned(),
            "CREATE INDEX idx_person_status_name \
             ON person (program_status, last_name, first_name, id)"
                .to_owned(),
        ]);
        crate::execute_all(manager, statements).await
    }
}
