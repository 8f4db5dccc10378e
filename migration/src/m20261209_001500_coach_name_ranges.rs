//! SQLite: a deep page of one coach's caseload, in one status or all, is found through the
//! counted name ranges too, and `idx_person_coach_name` goes (ADR 0087).
//!
//! `idx_person_coach_name` (coach, last name, first name, id) let a page deep into a
//! caseload skip index entries (`m20261121_000022`), and a coach reassignment by id wrote
//! its entries at random places, as the status's index did for a status change. The
//! ranges of `m20261209_001400` now count people by status and coach together:
//! `person_range_count` (status, range, coach or an empty key for none) replaces
//! `person_status_range`, so a status change or a reassignment moves one count, through
//! one trigger, and a status's page sums its coaches' counts. The existing caseload is
//! counted in the ranges as they are. PostgreSQL is unchanged.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use crate::m20261209_001400_status_name_ranges as status_ranges;
use status_ranges::range_of;

/// The prefix of the triggers keeping `person_range_count` current.
const RANGE_COUNT_TRIGGERS: &str = "person_range_count";

/// The coach key of the person `row`: their coach's id, or an empty key for none (a key
/// column cannot be NULL).
fn coach_key(row: &str) -> String {
    format!("coalesce({row}.coach_id, x'')")
}

/// Counts the person `row` (`new`) in its range.
fn count_in(row: &str) -> String {
    format!(
        "INSERT INTO person_range_count (program_status, range_no, coach_key, people) \
         VALUES ({row}.program_status, {}, {}, 1) \
         ON CONFLICT (program_status, range_no, coach_key) DO UPDATE SET people = people + 1;",
        range_of(row),
        coach_key(row)
    )
}

/// Stops counting the person `row` (`old`) in its range.
fn count_out(row: &str) -> String {
    format!(
        "UPDATE person_range_count SET people = people - 1 \
         WHERE program_status = {row}.program_status AND range_no = {} AND coach_key = {};",
        range_of(row),
        coach_key(row)
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
        let mut statements =
            status_ranges::drop_counting_triggers(status_ranges::STATUS_COUNT_TRIGGERS);
        statements.extend([
            "CREATE TABLE person_range_count (\
                 program_status TEXT NOT NULL, \
                 range_no INTEGER NOT NULL, \
                 coach_key BLOB NOT NULL, \
                 people INTEGER NOT NULL, \
                 PRIMARY KEY (program_status, range_no, coach_key)) WITHOUT ROWID"
                .to_owned(),
            // A caseload's page reads its coach's counts.
            "CREATE INDEX idx_person_range_count_coach \
             ON person_range_count (coach_key, program_status, range_no)"
                .to_owned(),
            // Cutting a range reads and moves all of its counts.
            "CREATE INDEX idx_person_range_count_range ON person_range_count (range_no)".to_owned(),
            format!(
                "INSERT INTO person_range_count (program_status, range_no, coach_key, people) \
                 SELECT program_status, {}, {}, COUNT(*) FROM person AS p GROUP BY 1, 2, 3",
                range_of("p"),
                coach_key("p")
            ),
            "DROP TABLE person_status_range".to_owned(),
        ]);
        statements.extend(status_ranges::counting_triggers(
            RANGE_COUNT_TRIGGERS,
            &["program_status", "coach_id", "last_name", "first_name"],
            &count_in("new"),
            &count_out("old"),
        ));
        statements.push("DROP INDEX idx_person_coach_name".to_owned());
        crate::execute_all(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Sqlite {
            return Ok(());
        }
        let mut statements = status_ranges::drop_counting_triggers(RANGE_COUNT_TRIGGERS);
        statements.extend(status_ranges::status_counts());
        statements.push(
            "INSERT INTO person_status_range (program_status, range_no, people) \
             SELECT program_status, range_no, SUM(people) FROM person_range_count \
             GROUP BY 1, 2"
                .to_owned(),
        );
        statements.extend(status_ranges::status_count_triggers());
        statements.extend([
            "DROP TABLE person_range_count".to_owned(),
            "CREATE INDEX idx_person_coach_name ON person (coach_id, last_name, first_name, id)"
                .to_owned(),
        ]);
        crate::execute_all(manager, statements).await
    }
}
