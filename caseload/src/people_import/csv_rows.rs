//! Rows of an uploaded CSV file, read a window of bytes at a time, so a file of any size is
//! never held whole and a reading can resume at any row's byte offset.
//!
//! The `csv` crate handles quoting, quoted newlines and CRLF. What is ours: a UTF-8 byte
//! order mark at the start is skipped; a UTF-16 one is refused; a field that is not UTF-8
//! makes its row invalid (with its line), not the file; and a row is only taken from a
//! window when something follows it (or the file ends there), so a row cut by the window's
//! end is read whole from the next one.

use csv::{ByteRecord, ReaderBuilder};

/// UTF-8's byte order mark, which spreadsheet programs write at the start of a CSV file.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// One row of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRow {
    /// The row's first line in the file, counting from 1 (quoted newlines make rows span
    /// lines).
    pub line: u64,
    /// Where the next row starts, as a byte offset in the file, and its line.
    pub next_offset: u64,
    pub next_line: u64,
    /// Its fields, or why it cannot be read.
    pub fields: Result<Vec<String>, String>,
}

/// Why a file cannot be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileProblem {
    #[error("the file is UTF-16; save it as CSV UTF-8")]
    Utf16,
    #[error("the file is empty")]
    Empty,
    #[error("a row at line {line} is longer than {limit} bytes")]
    RowTooLong { line: u64, limit: usize },
}

/// Where a file's first row starts: after a UTF-8 byte order mark, if it has one; a UTF-16
/// file is refused.
pub fn start_of_rows(head: &[u8]) -> Result<u64, FileProblem> {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return Err(FileProblem::Utf16);
    }
    Ok(if head.starts_with(UTF8_BOM) {
        UTF8_BOM.len() as u64
    } else {
        0
    })
}

/// The rows that start in `window` (file bytes from `offset`, where line `line` begins),
/// at most `max_rows`; `at_end` says the window reaches the end of the file. A row is taken
/// only when the window holds its end, so the caller reads on from the last row's
/// `next_offset`. Fails when not even one row fits in a window that is not the file's end.
pub fn rows_in(
    window: &[u8],
    offset: u64,
    line: u64,
    at_end: bool,
    max_rows: usize,
) -> Result<Vec<CsvRow>, FileProblem> {
    let mut reader = ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(window);
    let mut rows = Vec::new();
    let mut record = ByteRecord::new();
    // Where the last row ended (before its line end, which the reader takes with the next
    // row), and the line there: lines are counted from the bytes, as quoted newlines and the
    // blank lines the reader skips both move them on.
    let (mut read_up_to, mut line_there) = (0usize, line);
    while rows.len() < max_rows {
        let read = reader.read_byte_record(&mut record);
        let end = reader.position().byte() as usize;
        let whole = at_end || end < window.len();
        let fields = match read {
            Ok(false) => break,
            Ok(true) if !whole => break,
            // A row cut by the window's end can look malformed; read it from the next.
            Err(_) if !whole => break,
            Ok(true) => utf8_fields(&record),
            Err(error) => Err(format!("not readable as CSV: {error}")),
        };
        // A row starts at its first byte that is no line end: an unquoted row cannot begin
        // with one, and a quoted one begins with its quote.
        let start = read_up_to
            + window[read_up_to..end]
                .iter()
                .take_while(|byte| matches!(byte, b'\r' | b'\n'))
                .count();
        let row_line = line_there + newlines(&window[read_up_to..start]);
        let next_line = row_line + newlines(&window[start..end]);
        rows.push(CsvRow {
            line: row_line,
            next_offset: offset + end as u64,
            next_line,
            fields,
        });
        (read_up_to, line_there) = (end, next_line);
    }
    if rows.is_empty() && !at_end && !window.is_empty() {
        return Err(FileProblem::RowTooLong {
            line,
            limit: window.len(),
        });
    }
    Ok(rows)
}

/// How many line ends `bytes` hold.
fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|byte| **byte == b'\n').count() as u64
}

/// The record's fields as text, or which one is not UTF-8.
fn utf8_fields(record: &ByteRecord) -> Result<Vec<String>, String> {
    record
        .iter()
        .enumerate()
        .map(|(column, field)| {
            String::from_utf8(field.to_vec()).map_err(|_| {
                format!(
                    "column {} is not UTF-8 text (save the file as CSV UTF-8)",
                    column + 1
                )
            })
        })
        .collect()
}

/// Whether a row has nothing in it (a blank line, or only empty fields), so it is skipped.
pub fn is_blank(fields: &[String]) -> bool {
    fields.iter().all(|field| field.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(rows: &[CsvRow]) -> Vec<Vec<String>> {
        rows.iter().map(|row| row.fields.clone().unwrap()).collect()
    }

    #[test]
    fn quoting_quoted_newlines_and_crlf_are_read_with_their_lines() {
        let file =
            b"id,name\r\n1,\"Ada\r\nLovelace\"\r\n2,\"Grace \"\"Amazing\"\" Hopper\"\r\n3,Alan";
        let rows = rows_in(file, 0, 1, true, 100).unwrap();
        assert_eq!(
            fields(&rows),
            [
                vec!["id", "name"],
                vec!["1", "Ada\r\nLovelace"],
                vec!["2", "Grace \"Amazing\" Hopper"],
                vec!["3", "Alan"],
            ]
        );
        assert_eq!(
            rows.iter().map(|r| r.line).collect::<Vec<_>>(),
            [1, 2, 4, 5]
        );
        assert_eq!(rows[3].next_offset, file.len() as u64);
    }

    #[test]
    fn a_window_takes_only_the_rows_it_holds_whole_and_reading_resumes() {
        let file = b"a,b\n1,\"x\ny\"\n2,z\n";
        // Cut inside the quoted field: only the first row is taken.
        let rows = rows_in(&file[..8], 0, 1, false, 100).unwrap();
        assert_eq!(fields(&rows), [vec!["a", "b"]]);
        let next = rows[0].next_offset as usize;
        let rest = rows_in(&file[next..], next as u64, 2, true, 100).unwrap();
        assert_eq!(fields(&rest), [vec!["1", "x\ny"], vec!["2", "z"]]);
        assert_eq!(rest.iter().map(|r| r.line).collect::<Vec<_>>(), [2, 4]);
        // At most `max_rows`.
        assert_eq!(rows_in(file, 0, 1, true, 2).unwrap().len(), 2);
    }

    #[test]
    fn byte_order_marks_encodings_and_long_rows() {
        assert_eq!(start_of_rows(b"\xEF\xBB\xBFid,name"), Ok(3));
        assert_eq!(start_of_rows(b"id,name"), Ok(0));
        assert_eq!(start_of_rows(b"\xFF\xFEi\0d\0"), Err(FileProblem::Utf16));
        let latin1 = rows_in(b"1,Jos\xE9\n", 0, 1, true, 10).unwrap();
        assert!(
            latin1[0]
                .fields
                .as_ref()
                .unwrap_err()
                .contains("column 2 is not UTF-8")
        );
        assert_eq!(
            rows_in(&[b'x'; 64], 0, 7, false, 10),
            Err(FileProblem::RowTooLong { line: 7, limit: 64 })
        );
        assert!(is_blank(&[" ".into(), String::new()]));
    }
}
