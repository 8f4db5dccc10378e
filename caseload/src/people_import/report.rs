//! An import's error report: every row that was not imported, with its line and reason, as
//! CSV, read a page at a time so a file of a million bad rows is never held whole. Cells are
//! defused as an export's are: a spreadsheet opening the report runs no formula from it.

use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::export::defuse_formula;
use crate::store::imports::problems_after;

/// The report's first line.
pub const REPORT_HEADER: &[u8] = b"line,school_id,problem\n";
/// Problems per page.
const PAGE_ROWS: u64 = 1_000;

/// One page of the report.
pub struct ReportPage {
    /// The page's rows as CSV.
    pub csv: Vec<u8>,
    pub rows: u64,
    /// The line of the last problem on the page: the next page starts after it.
    pub last_line: u64,
}

/// The report's rows after line `after_line` (0 for the first page); `None` when no rows
/// are left.
pub async fn report_page<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    after_line: u64,
) -> Result<Option<ReportPage>, CaseloadError> {
    let page = problems_after(db, import_id, after_line, PAGE_ROWS).await?;
    let Some(last_line) = page.last().map(|problem| problem.line) else {
        return Ok(None);
    };
    let rows = page.len() as u64;
    let mut writer = csv::Writer::from_writer(Vec::new());
    for problem in page {
        writer
            .write_record([
                problem.line.to_string(),
                defuse_formula(problem.school_id.unwrap_or_default()),
                defuse_formula(problem.message),
            ])
            .map_err(|error| CaseloadError::Io(error.into()))?;
    }
    let csv = writer
        .into_inner()
        .map_err(|error| CaseloadError::Io(error.into_error()))?;
    Ok(Some(ReportPage {
        csv,
        rows,
        last_line,
    }))
}
