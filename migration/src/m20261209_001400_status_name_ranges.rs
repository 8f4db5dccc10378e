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

/// The prefix of the triggers keeping `person_status_range` current.
pub(crate) const STATUS_COUNT_TRIGGERS: &str = "person_status_range";

/// What fires the triggers of [`counting_triggers`]: each is `{prefix}_{event}`.
const COUNTING_EVENTS: [&str; 3] = ["insert", "delete", "update"];

/// The range holding the person `row` (`new` or `old`): the last one starting at or before
/// their sort key.
pub(crate) fn range_of(row: &str) -> String {
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

/// `person_status_range`, empty.
pub(crate) fn status_counts() -> [String; 2] {
    [
        "CREATE TABLE person_status_range (\
             program_status TEXT NOT NULL, \
             range_no INTEGER NOT NULL, \
             people INTEGER NOT NULL, \
             PRIMARY KEY (program_status, range_no)) WITHOUT ROWID"
            .to_owned(),
        // Splitting a range reads its counts of every status.
        "CREATE INDEX idx_person_status_range_range ON person_status_range (range_no)".to_owned(),
    ]
}

/// The triggers keeping `person_status_range` current, created.
pub(crate) fn status_count_triggers() -> [String; 3] {
    counting_triggers(
        STATUS_COUNT_TRIGGERS,
        &["program_status", "last_name", "first_name"],
        &count_in("new"),
        &count_out("old"),
    )
}

/// `DROP TRIGGER` for each of the triggers [`counting_triggers`] made with `prefix`.
pub(crate) fn drop_counting_triggers(prefix: &str) -> Vec<String> {
    COUNTING_EVENTS
        .iter()
        .map(|event| format!("DROP TRIGGER {prefix}_{event}"))
        .collect()
}

/// Triggers `{prefix}_insert`, `_delete` and `_update` running `count_in` for a person who
/// arrives, `count_out` for one who leaves, and both for one whose `columns` change.
pub(crate) fn counting_triggers(
    prefix: &str,
    columns: &[&str],
    count_in: &str,
    count_out: &str,
) -> [String; 3] {
    let changed = columns
        .iter()
        .map(|column| format!("old.{column} IS NOT new.{column}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    [
        format!("CREATE TRIGGER {prefix}_insert AFTER INSERT ON person BEGIN {count_in} END"),
        format!("CREATE TRIGGER {prefix}_delete AFTER DELETE ON person BEGIN {count_out} END"),
        format!(
            "CREATE TRIGGER {prefix}_update AFTER UPDATE OF {} ON person WHEN {changed} \
             BEGIN {count_out} {count_in} END",
            columns.join(", ")
        ),
    ]
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let mut statements = vec![
            "CREATE TABLE person_name_range (\
                 range_no INTEGER PRIMARY KEY, \
                 last_name TEXT NOT NULL, \
                 first_name TEXT NOT NULL, \
                 id BLOB NOT NULL)"
                .to_owned(),
            "CREATE UNIQUE INDEX idx_person_name_range_start \
             ON person_name_range (last_name, first_name, id)"
                .to_owned(),
            "INSERT INTO person_name_range (range_no, last_name, first_name, id) \
             VALUES (0, '', '', x'')"
                .to_owned(),
        ];
        statements.extend(status_counts());
        statements.push(
            "INSERT INTO person_status_range (program_status, range_no, people) \
             SELECT program_status, 0, COUNT(*) FROM person GROUP BY program_status"
                .to_owned(),
        );
        statements.extend(status_count_triggers());
        statements.push("DROP INDEX idx_person_status_name".to_owned());
        crate::execute_all(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let mut statements = drop_counting_triggers(STATUS_COUNT_TRIGGERS);
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
