//! What importing an uploaded file would do, found by reading it through once without
//! writing anything: its columns and how they map, its first rows, every row that cannot
//! be imported with its line and reason, and how many people would be created, changed,
//! left unchanged and (in a full sync) retired.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use bulkq_types::person_records::SyncCounts;
use sea_orm::ConnectionTrait;

use super::upload::Upload;
use super::{ColumnMapping, ImportPreview, RowProblem, RowReader, read_head, sort_rows};
use crate::CaseloadError;
use crate::people_sync::outcomes;
use crate::store::people_sync::unretired_count;

/// Rows shown as they are in the file.
pub const FIRST_ROWS: usize = 10;
/// Problems listed in full (the error report after the import has every one).
pub const PROBLEMS_LISTED: usize = 1_000;
/// Rows read per pass of the preview.
const ROWS_PER_PASS: usize = 5_000;

/// Reads `upload` through with `mapping` (or the one its header suggests).
pub async fn preview<C: ConnectionTrait>(
    db: &C,
    upload: &Upload,
    mapping: Option<ColumnMapping>,
    full_sync: bool,
) -> Result<ImportPreview, CaseloadError> {
    let head = read_head(db, upload).await?;
    let mapping = mapping.unwrap_or_else(|| ColumnMapping::guess(&head.header));
    let mut preview = ImportPreview {
        mapping_problems: mapping
            .problems(head.header.len())
            .into_iter()
            .map(|(field, problem)| (field.to_owned(), problem))
            .collect(),
        header: head.header,
        mapping,
        first_rows: Vec::new(),
        first_row: head.first_row,
        rows: 0,
        counts: SyncCounts::default(),
        problems: Vec::new(),
        problem_count: 0,
    };
    if !preview.mapping_problems.is_empty() {
        return Ok(preview);
    }
    // Hashes of the school ids seen: a repeat is a problem, as the import will find it.
    let hasher = RandomState::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut kept_unretired = 0;
    let mut at = head.first_row;
    let mut reader = RowReader::default();
    loop {
        let (rows, next, done) = reader.next_rows(db, upload, at, ROWS_PER_PASS).await?;
        for row in rows
            .iter()
            .take(FIRST_ROWS.saturating_sub(preview.first_rows.len()))
        {
            preview
                .first_rows
                .push(row.fields.clone().unwrap_or_default());
        }
        let mut sorted = sort_rows(db, &preview.mapping, rows).await?;
        preview.rows += (sorted.records.len() + sorted.problems.len()) as u64;
        sorted.records.retain(|(line, record)| {
            if seen.insert(hasher.hash_one(&record.school_id)) {
                return true;
            }
            sorted.problems.push(RowProblem {
                line: *line,
                school_id: Some(record.school_id.clone()),
                message: format!(
                    "school_id: {:?} appears on an earlier row of the file",
                    record.school_id
                ),
            });
            false
        });
        sorted.problems.sort_by_key(|problem| problem.line);
        let records: Vec<_> = sorted
            .records
            .into_iter()
            .map(|(_, record)| record)
            .collect();
        let (found, kept) = outcomes(db, &records).await?;
        kept_unretired += kept;
        found
            .into_iter()
            .for_each(|outcome| preview.counts.add(outcome));
        preview.problem_count += sorted.problems.len() as u64;
        let room = PROBLEMS_LISTED.saturating_sub(preview.problems.len());
        preview
            .problems
            .extend(sorted.problems.into_iter().take(room));
        if done {
            break;
        }
        at = next;
    }
    if full_sync {
        preview.counts.retired = unretired_count(db).await?.saturating_sub(kept_unretired);
    }
    Ok(preview)
}
