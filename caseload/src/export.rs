//! CSV export of people: chosen columns, written batch by batch to a file with bounded memory.
//!
//! The file is not part of any database transaction, so it is made resumable instead: after
//! each batch [`CsvExport::checkpoint`] flushes and syncs the file and returns its length
//! and row count, which the executor stores in the same transaction as its batch checkpoint.
//! A crash between the two leaves extra bytes at the end; [`CsvExport::open`] with the stored
//! [`ExportProgress`] cuts them off, so a resumed export never repeats or loses a row.
//!
//! Cells are written by the `csv` crate (RFC 4180 quoting, UTF-8). A cell that a spreadsheet
//! would run as a formula (starting with `=`, `+`, `-`, `@`, tab or carriage return) gets a
//! leading `'`, the OWASP advice against CSV injection.

use std::fs::{File, OpenOptions};
use std::path::Path;

use bulkq_types::export::ExportColumn;
use serde::{Deserialize, Serialize};

use crate::CaseloadError;
use crate::store::entity::person;

/// The row cap when the request names none.
pub const DEFAULT_ROW_CAP: u64 = 1_000_000;

/// The cell of `column` for `person`.
fn cell(column: ExportColumn, person: &person::Model) -> String {
    match column {
        ExportColumn::Id => person.id.to_string(),
        ExportColumn::SchoolId => person.school_id.clone(),
        ExportColumn::FirstName => person.first_name.clone(),
        ExportColumn::LastName => person.last_name.clone(),
        ExportColumn::Email => person.email.clone().unwrap_or_default(),
        ExportColumn::ProgramStatus => person.program_status.clone(),
        ExportColumn::CoachId => person.coach_id.map(|id| id.to_string()).unwrap_or_default(),
        ExportColumn::UpdatedAt => person.updated_at.to_rfc3339(),
    }
}

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportOptions {
    /// The columns, in file order; at least one, none twice.
    pub columns: Vec<ExportColumn>,
    /// Rows after which the export stops (the header not counted).
    pub row_cap: u64,
}

impl ExportOptions {
    /// Rejects an empty or repeated column list and a zero row cap.
    pub fn validate(&self) -> Result<(), CaseloadError> {
        crate::error::first_problem(self.problems())
    }

    /// Everything wrong with the options, by field (`columns`, `row_cap`).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        if self.columns.is_empty() {
            problems.push(("columns", "choose at least one column".into()));
        } else if let Some(repeated) = self.columns.iter().find(|c| !seen.insert(**c)) {
            problems.push((
                "columns",
                format!("the column {} is chosen twice", repeated.header()),
            ));
        }
        if self.row_cap == 0 {
            problems.push(("row_cap", "row_cap must be at least 1".into()));
        }
        problems
    }
}

/// How far an export file got; stored in the task's checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportProgress {
    /// The file's length at the checkpoint; anything after it is cut off on resume.
    pub bytes: u64,
    /// Data rows written (the header not counted).
    pub rows: u64,
}

/// An export file being written.
pub struct CsvExport {
    writer: csv::Writer<File>,
    options: ExportOptions,
    rows: u64,
}

impl CsvExport {
    /// Starts the file at `path` (writing the header) or, given the progress of an earlier
    /// attempt, reopens it and cuts it back to that point.
    pub fn open(
        path: &Path,
        options: ExportOptions,
        resume: Option<ExportProgress>,
    ) -> Result<Self, CaseloadError> {
        options.validate()?;
        let (file, rows) = match resume {
            None => (File::create(path)?, 0),
            Some(progress) => {
                let file = OpenOptions::new().append(true).open(path)?;
                file.set_len(progress.bytes)?;
                (file, progress.rows)
            }
        };
        let mut export = CsvExport {
            writer: csv::Writer::from_writer(file),
            options,
            rows,
        };
        if resume.is_none() {
            let headers: Vec<&str> = export.options.columns.iter().map(|c| c.header()).collect();
            export
                .writer
                .write_record(&headers)
                .map_err(std::io::Error::from)?;
        }
        Ok(export)
    }

    /// Writes one row per person until the row cap is reached; returns how many it wrote.
    pub fn write_people(&mut self, people: &[person::Model]) -> Result<u64, CaseloadError> {
        let room = self.options.row_cap - self.rows;
        let mut written = 0;
        for person in people
            .iter()
            .take(usize::try_from(room).unwrap_or(usize::MAX))
        {
            let record = self
                .options
                .columns
                .iter()
                .map(|column| defuse_formula(cell(*column, person)));
            self.writer
                .write_record(record)
                .map_err(std::io::Error::from)?;
            written += 1;
        }
        self.rows += written;
        Ok(written)
    }

    /// Whether the row cap is reached (the export should stop).
    pub fn is_full(&self) -> bool {
        self.rows >= self.options.row_cap
    }

    /// Drops what was written after `to` (a batch that never committed): the file ends
    /// where its last checkpoint says, as a resumed attempt would cut it.
    pub fn cut_back(&mut self, to: ExportProgress) -> Result<(), CaseloadError> {
        self.writer.flush()?;
        let file = self.writer.get_ref();
        file.set_len(to.bytes)?;
        file.sync_data()?;
        self.rows = to.rows;
        Ok(())
    }

    /// Flushes and syncs everything written so far and says how far that is.
    pub fn checkpoint(&mut self) -> Result<ExportProgress, CaseloadError> {
        self.writer.flush()?;
        let file = self.writer.get_ref();
        file.sync_data()?;
        Ok(ExportProgress {
            bytes: file.metadata()?.len(),
            rows: self.rows,
        })
    }
}

/// Prefixes `'` to a cell a spreadsheet would evaluate as a formula.
pub fn defuse_formula(cell: String) -> String {
    if bulkq_types::person_records::looks_like_a_formula(&cell) {
        format!("'{cell}")
    } else {
        cell
    }
}

/// `records` as CSV text, a line each: a page of a streamed download.
pub fn csv_lines<R, F>(records: impl IntoIterator<Item = R>) -> Result<Vec<u8>, CaseloadError>
where
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    let mut writer = csv::Writer::from_writer(Vec::new());
    for record in records {
        writer
            .write_record(record)
            .map_err(|error| CaseloadError::Io(error.into()))?;
    }
    writer
        .into_inner()
        .map_err(|error| CaseloadError::Io(error.into_error()))
}

#[cfg(test)]
mod tests {
    use super::defuse_formula;

    #[test]
    fn formula_cells_are_defused_and_others_kept() {
        for risky in ["=1+1", "+SUM(A1)", "-2", "@cmd", "\tx", "\rx"] {
            assert_eq!(defuse_formula(risky.into()), format!("'{risky}"));
        }
        for plain in ["Ada", "O'Brien", "", "a=b", "2026-11-21"] {
            assert_eq!(defuse_formula(plain.into()), plain);
        }
    }
}
