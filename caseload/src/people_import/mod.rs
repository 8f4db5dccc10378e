//! The CSV import of people: a file from the school's records, uploaded in chunks
//! ([`upload`]), read a window at a time ([`csv_rows`]), its columns matched to fields
//! (`bulkq_types::people_import::ColumnMapping`), previewed without writing ([`preview`]),
//! then started ([`start`]) and applied by a queue task in checkpointed batches
//! (`actions::executors::people_import`), each batch's people, problems and cursor committed
//! together, so a killed import resumes exactly after its last batch. Uploads no task needs
//! are deleted by a periodic job ([`cleanup`]).
//!
//! Every row goes through `people_sync`, as the JSON API's records do: the same file again
//! changes nothing. A school id is claimed once per import in `people_import_seen` (a second
//! row with it is a problem, wherever it is in the file); a full sync then retires everyone
//! not claimed.

pub mod cleanup;
pub mod csv_rows;
pub mod preview;
pub mod report;
pub mod start;
pub mod upload;

use bulkq_types::person_records::{PersonRecord, SyncCounts};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CaseloadError;
use crate::people_sync::{RecordProblems, ResolvedRecord, resolve};
use crate::store;
pub use bulkq_types::people_import::{ColumnMapping, FilePosition, ImportPreview, RowProblem};
use csv_rows::{CsvRow, FileProblem, is_blank, rows_in, start_of_rows};
use upload::{Upload, read_window};

/// The most bytes read from an upload at once; a row longer than this is refused.
pub const WINDOW_BYTES: usize = 4 << 20;

/// What an import task is asked to do (its spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSpec {
    pub upload_id: Uuid,
    /// The uploaded file's name, for the task's summary.
    pub file_name: String,
    pub mapping: ColumnMapping,
    /// Retire everyone the file does not name.
    pub full_sync: bool,
    /// Where the first row after the header starts, and its line.
    pub first_row: FilePosition,
    /// The file's data rows, as the preview counted them (the task's progress total).
    pub rows: u64,
}

impl ImportSpec {
    /// The import of `upload` as `preview` read it.
    pub fn of(upload: &Upload, preview: &ImportPreview, full_sync: bool) -> Self {
        Self::new(
            upload,
            preview.mapping.clone(),
            preview.first_row,
            preview.rows,
            full_sync,
        )
    }

    /// The import of `upload`'s `rows` rows from `first_row` with `mapping`.
    pub fn new(
        upload: &Upload,
        mapping: ColumnMapping,
        first_row: FilePosition,
        rows: u64,
        full_sync: bool,
    ) -> Self {
        ImportSpec {
            upload_id: upload.id,
            file_name: upload.file_name.clone(),
            mapping,
            full_sync,
            first_row,
            rows,
        }
    }
}

/// How many data rows `upload` has from `first_row`, as a preview counts them (blank rows
/// not, unreadable ones too), read through without looking anything up.
pub async fn count_rows<C: ConnectionTrait>(
    db: &C,
    upload: &Upload,
    first_row: FilePosition,
) -> Result<u64, CaseloadError> {
    let mut reader = RowReader::default();
    let (mut at, mut rows) = (first_row, 0);
    loop {
        let (batch, next, done) = reader.next_rows(db, upload, at, 10_000).await?;
        rows += batch
            .iter()
            .filter(|row| row.fields.as_ref().map_or(true, |fields| !is_blank(fields)))
            .count() as u64;
        if done {
            return Ok(rows);
        }
        at = next;
    }
}

/// Where an import stands (its checkpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImportProgress {
    pub phase: ImportPhase,
    /// Where the next batch of rows starts; the spec's first row before the first batch.
    pub at: Option<FilePosition>,
    /// Rows read so far (problems included).
    pub rows: u64,
    pub counts: SyncCounts,
    /// Rows that could not be imported (their lines and reasons are in the error report).
    pub problems: u64,
    /// The last school id a full sync has retired up to.
    pub retired_up_to: String,
}

/// What an import is doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportPhase {
    #[default]
    Rows,
    /// A full sync retiring the people the file did not name.
    Retiring,
    Done,
}

/// The checkpoint key holding an import's progress.
pub const PROGRESS_KEY: &str = "import";

impl ImportProgress {
    /// The progress of an import task, from its checkpoint.
    pub fn of(state: &serde_json::Value) -> Self {
        state
            .get(PROGRESS_KEY)
            .and_then(|progress| serde_json::from_value(progress.clone()).ok())
            .unwrap_or_default()
    }
}

/// A file's header row and where its data rows start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHead {
    pub header: Vec<String>,
    pub first_row: FilePosition,
}

/// The header of `upload`, or why the file cannot be imported at all.
pub async fn read_head<C: ConnectionTrait>(
    db: &C,
    upload: &Upload,
) -> Result<FileHead, CaseloadError> {
    let (window, at_end) = read_window(db, upload, 0, WINDOW_BYTES).await?;
    let start = start_of_rows(&window).map_err(file_problem)?;
    let rows = rows_in(&window[start as usize..], start, 1, at_end, 1).map_err(file_problem)?;
    let Some(row) = rows.into_iter().next() else {
        return Err(file_problem(FileProblem::Empty));
    };
    let header = row
        .fields
        .map_err(|problem| CaseloadError::Invalid(format!("the header row: {problem}")))?;
    Ok(FileHead {
        header,
        first_row: FilePosition {
            offset: row.next_offset,
            line: row.next_line,
        },
    })
}

/// Reads an upload's rows in order, keeping the window of the file it read last: each
/// batch takes its rows from it, and a window is read again only when a batch's rows run
/// past its end, so every stored chunk is read about once (not a whole window per batch).
#[derive(Debug, Default)]
pub struct RowReader {
    window: Vec<u8>,
    /// The file offset of the window's first byte.
    window_at: u64,
    /// Whether the window reaches the end of the file.
    window_ends_file: bool,
}

impl RowReader {
    /// The next at most `max_rows` rows of `upload` from `at`, where reading goes on next,
    /// and whether the file ends there.
    pub async fn next_rows<C: ConnectionTrait>(
        &mut self,
        db: &C,
        upload: &Upload,
        at: FilePosition,
        max_rows: usize,
    ) -> Result<(Vec<CsvRow>, FilePosition, bool), CaseloadError> {
        let window_end = self.window_at + self.window.len() as u64;
        if !(self.window_at..=window_end).contains(&at.offset) {
            self.read(db, upload, at.offset).await?;
        }
        let rows = loop {
            let from = (at.offset - self.window_at) as usize;
            let rows = rows_in(
                &self.window[from..],
                at.offset,
                at.line,
                self.window_ends_file,
                max_rows,
            );
            let short = rows
                .as_ref()
                .map_or(true, |rows| rows.len() < max_rows && !self.window_ends_file);
            // Rows ran past the window's end: read on from `at`, once.
            if short && from > 0 {
                self.read(db, upload, at.offset).await?;
                continue;
            }
            break rows.map_err(file_problem)?;
        };
        let next = match rows.last() {
            Some(last) => FilePosition {
                offset: last.next_offset,
                line: last.next_line,
            },
            None => at,
        };
        // The window reached the file's end and the reader stopped short of `max_rows`:
        // every row is read (what may follow is a line end the reader had no row for).
        let done = self.window_ends_file && rows.len() < max_rows;
        Ok((rows, next, done))
    }

    async fn read<C: ConnectionTrait>(
        &mut self,
        db: &C,
        upload: &Upload,
        offset: u64,
    ) -> Result<(), CaseloadError> {
        let (window, ends_file) = read_window(db, upload, offset, WINDOW_BYTES).await?;
        (self.window, self.window_at, self.window_ends_file) = (window, offset, ends_file);
        Ok(())
    }
}

/// A batch's rows sorted into records to apply and problems, checked alone, against each
/// other and against the database; blank rows are skipped.
pub struct SortedRows {
    pub records: Vec<(u64, ResolvedRecord)>,
    pub problems: Vec<RowProblem>,
}

/// Reads `rows` with `mapping` and resolves them (see `people_sync::resolve`).
pub async fn sort_rows<C: ConnectionTrait>(
    db: &C,
    mapping: &ColumnMapping,
    rows: Vec<CsvRow>,
) -> Result<SortedRows, CaseloadError> {
    let mut problems = Vec::new();
    let mut lines = Vec::with_capacity(rows.len());
    let mut records: Vec<PersonRecord> = Vec::with_capacity(rows.len());
    for row in rows {
        match row.fields {
            Ok(fields) if is_blank(&fields) => {}
            Ok(fields) => {
                lines.push(row.line);
                records.push(mapping.record(&fields));
            }
            Err(message) => problems.push(RowProblem {
                line: row.line,
                school_id: None,
                message,
            }),
        }
    }
    let resolved = resolve(db, &records).await?;
    let mut sorted = Vec::with_capacity(records.len());
    for ((line, record), outcome) in lines.into_iter().zip(&records).zip(resolved) {
        match outcome {
            Ok(resolved) => sorted.push((line, resolved)),
            Err(fields) => problems.push(RowProblem {
                line,
                school_id: Some(record.school_id.trim().to_owned()).filter(|id| !id.is_empty()),
                message: describe(&fields),
            }),
        }
    }
    problems.sort_by_key(|problem| problem.line);
    Ok(SortedRows {
        records: sorted,
        problems,
    })
}

/// A record's problems in one line: `coach: no staff user is called "x"; email: …`.
fn describe(fields: &RecordProblems) -> String {
    fields
        .iter()
        .map(|(field, problem)| format!("{field}: {problem}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Claims each record's school id for `import_id`; the records whose school id an earlier
/// row claimed come back as problems and are dropped from `records`.
pub async fn claim_school_ids<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    records: &mut Vec<(u64, ResolvedRecord)>,
) -> Result<Vec<RowProblem>, CaseloadError> {
    let claimed = store::imports::claim_school_ids(db, import_id, records).await?;
    let mut problems = Vec::new();
    records.retain(|(line, record)| {
        let first = claimed.contains(&record.school_id);
        if !first {
            problems.push(RowProblem {
                line: *line,
                school_id: Some(record.school_id.clone()),
                message: format!(
                    "school_id: {:?} appears on an earlier row of the file",
                    record.school_id
                ),
            });
        }
        first
    });
    Ok(problems)
}

fn file_problem(problem: FileProblem) -> CaseloadError {
    CaseloadError::Invalid(problem.to_string())
}
