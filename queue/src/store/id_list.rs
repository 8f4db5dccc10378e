//! "This column is one of these ids", written the way each backend does it best: as one
//! parameter, whatever the number of ids.
//!
//! A literal list (`IN (?, ?, …)`) makes a statement of its own for every list length. A
//! batch that filters 1,000 people, then the 987 it changed, compiles two new statements,
//! and a connection's statement cache churns: on SQLite each such program is the size of
//! its list, so a bulk status change's memory went mostly to compiled statements, and
//! compiling them is work repeated every batch (ADR 0014). With the ids as one parameter
//! the statement is the same for every batch and stays prepared.
//!
//! - PostgreSQL: `column = ANY($1)`, the ids as one array.
//! - SQLite: `column IN (SELECT unhex(value) FROM json_each(?))`, the ids as one JSON array
//!   of hex strings (SQLite has no array parameter; a UUID column holds 16-byte blobs, which
//!   `unhex` turns the strings back into). The planner still looks each id up in the
//!   column's index.
//!
//! [`id_rows`] gives the same list as rows, for a statement that inserts one row per id.
//! [`IdListFilter::in_text_list`] and [`text_rows`] do the same for text keys (a school id),
//! as a `text[]` or a JSON array of strings.

use std::fmt::Write;

use sea_orm::sea_query::{BinOper, Expr, ExprTrait};
use sea_orm::{ColumnTrait, DbBackend, Value};
use uuid::Uuid;

/// SQLite's rows of ids from one JSON parameter, one column named `id`.
const SQLITE_ID_ROWS: &str = "SELECT unhex(value) AS id FROM json_each(?)";

/// SQLite's rows of text from one JSON parameter, one column named `value`.
const SQLITE_TEXT_ROWS: &str = "SELECT value FROM json_each(?)";

/// The store's filter for a list of ids, for every crate that keeps its rows in the app's
/// database: `Column::Id.in_id_list(backend, ids)` where SeaORM would say `is_in(ids)`.
pub trait IdListFilter: ColumnTrait {
    /// `column = ANY($1)` on PostgreSQL, `column IN (SELECT unhex(value) FROM
    /// json_each(?))` on SQLite.
    fn in_id_list(self, backend: DbBackend, ids: impl IntoIterator<Item = Uuid>) -> Expr {
        match backend {
            DbBackend::Postgres => self.eq_any(ids),
            _ => Expr::col(self.as_column_ref()).binary(
                BinOper::In,
                Expr::cust_with_values(format!("({SQLITE_ID_ROWS})"), [hex_json_array(ids)]),
            ),
        }
    }

    /// `column = ANY($1)` on PostgreSQL, `column IN (SELECT value FROM json_each(?))` on
    /// SQLite: [`IdListFilter::in_id_list`] for a text column.
    fn in_text_list(self, backend: DbBackend, texts: impl IntoIterator<Item = String>) -> Expr {
        match backend {
            DbBackend::Postgres => self.eq_any(texts),
            _ => Expr::col(self.as_column_ref()).binary(
                BinOper::In,
                Expr::cust_with_values(format!("({SQLITE_TEXT_ROWS})"), [json_array(texts)]),
            ),
        }
    }
}

impl<C: ColumnTrait> IdListFilter for C {}

/// `texts` as a table of one column, `value`, bound as one parameter: [`id_rows`] for text.
pub fn text_rows(
    backend: DbBackend,
    parameter: usize,
    texts: impl IntoIterator<Item = String>,
) -> (String, Value) {
    match backend {
        DbBackend::Postgres => (
            format!("unnest(${parameter}::text[]) AS rows (value)"),
            texts.into_iter().collect::<Vec<String>>().into(),
        ),
        _ => (
            format!("({SQLITE_TEXT_ROWS}) AS rows"),
            json_array(texts).into(),
        ),
    }
}

/// `["…", …]`: the JSON array SQLite's text lists read.
fn json_array(texts: impl IntoIterator<Item = String>) -> String {
    serde_json::Value::from(texts.into_iter().collect::<Vec<String>>()).to_string()
}

/// `ids` as a table of one column, `id`, bound as one parameter: a `FROM` item and the value
/// to bind as the statement's parameter number `parameter` (PostgreSQL numbers its
/// parameters; SQLite's `?` takes the next one).
///
/// An `INSERT … SELECT` from it is one statement whatever the number of rows, where a
/// multi-row `VALUES` list is a statement of its own for every length: prepared anew for
/// each batch and cached by every connection that ran it (ADR 0014).
pub fn id_rows(
    backend: DbBackend,
    parameter: usize,
    ids: impl IntoIterator<Item = Uuid>,
) -> (String, Value) {
    match backend {
        DbBackend::Postgres => (
            format!("unnest(${parameter}::uuid[]) AS ids (id)"),
            ids.into_iter().collect::<Vec<Uuid>>().into(),
        ),
        _ => (
            format!("({SQLITE_ID_ROWS}) AS ids"),
            hex_json_array(ids).into(),
        ),
    }
}

/// `["<32 hex digits>", …]`: the JSON array SQLite's `in_id_list` reads.
fn hex_json_array(ids: impl IntoIterator<Item = Uuid>) -> String {
    let mut json = String::from("[");
    for (n, id) in ids.into_iter().enumerate() {
        let separator = if n == 0 { "" } else { "," };
        // Writing to a String cannot fail.
        let _ = write!(json, "{separator}\"{}\"", id.simple());
    }
    json.push(']');
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_list_is_one_json_parameter_of_hex_ids() {
        let a = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let b = Uuid::from_u128(1);
        assert_eq!(
            hex_json_array([a, b]),
            r#"["0123456789abcdef0123456789abcdef","00000000000000000000000000000001"]"#
        );
        assert_eq!(hex_json_array([]), "[]");
    }

    #[test]
    fn a_sqlite_text_list_is_one_json_parameter_with_its_quotes_escaped() {
        let texts = ["S1".to_owned(), "a \"b\"".to_owned()];
        assert_eq!(json_array(texts), r#"["S1","a \"b\""]"#);
    }
}
