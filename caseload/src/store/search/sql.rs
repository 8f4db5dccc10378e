//! The SQL fragments of the caseload search whose text differs per backend (SQLite's FTS5
//! and LIKE, PostgreSQL's trigram and "C"-collation ranges), and the LIKE patterns they share.

use bulkq_types::text::escape_like;
use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr, Query, SelectStatement};
use sea_orm::{ColumnTrait, Condition, DbBackend, IdenStatic};

use super::queries::SORT_KEY;
use crate::store::entity::person;

/// The text a "contains" search looks in, over `person`'s columns: what the migrations store
/// in `person_contains` (the FTS5 table on SQLite, where the LIKE rechecks this expression).
const CONTAINS_EXPRESSION: &str =
    "lower(first_name || ' ' || last_name || ' ' || school_id || ' ' || coalesce(email, ''))";

/// The table answering "contains" searches on both backends: an FTS5 phrase index on SQLite
/// (rowids only), a table of each person's text and sort key under a trigram index on
/// PostgreSQL.
const CONTAINS_TABLE: &str = "person_contains";

/// SQLite only: each person's sort key by `person` rowid, the rowids FTS5 answers with
/// (migration `m20261122_000041`).
const SORT_KEY_TABLE: &str = "person_sort_key";

/// The sort key of every person whose text contains `text` (already lowercase), read from
/// narrow tables and never from `person`: on PostgreSQL `person_contains` holds the key
/// next to the text (see `m20261121_000040`); on SQLite the FTS5 index finds the rowids
/// and `person_sort_key` has their keys (see `m20261122_000041`).
///
/// On SQLite each match's key is looked up as the FTS5 index hands the match out (`CROSS
/// JOIN`, whose order SQLite keeps), because `rid IN (SELECT rowid …)` first copies every
/// match into a temporary index (ADR 0020).
pub(super) fn contains_keys(backend: DbBackend, text: &str) -> SelectStatement {
    let mut keys = Query::select()
        .from(CONTAINS_TABLE)
        .cond_where(contains_table_matches(backend, text))
        .to_owned();
    match backend {
        DbBackend::Sqlite => keys
            .columns(SORT_KEY.map(|column| (SORT_KEY_TABLE, column)))
            .cross_join(SORT_KEY_TABLE)
            .and_where(Expr::col((SORT_KEY_TABLE, "rid")).equals((CONTAINS_TABLE, "rowid")))
            .to_owned(),
        _ => keys.columns(SORT_KEY).to_owned(),
    }
}

/// The person's names, school id or email contain `text` (already lowercase).
///
/// The answer comes from `person_contains` ([`contains_table_matches`]). On PostgreSQL that
/// is exact and serves the condition alone. On SQLite the FTS5 table holds no copy of the
/// text to test, so the LIKE over `person` is the condition and the table, whose phrase
/// query matches the same rows, only narrows it down (a walk offers no index at all).
pub(super) fn contains(backend: DbBackend, walk: bool, text: &str) -> Condition {
    match backend {
        DbBackend::Postgres => {
            Condition::all().add(person::Column::Id.in_subquery(matching(backend, text)))
        }
        _ => {
            let like =
                Condition::all().add(Expr::cust(CONTAINS_EXPRESSION).like(contains_pattern(text)));
            match walk {
                true => like,
                false => like.add(Expr::cust("person.rowid").in_subquery(matching(backend, text))),
            }
        }
    }
}

/// Who has `text` (already lowercase) in their "contains" text: the `person_contains` key of
/// each, which is `person.id` on PostgreSQL and `person.rowid` on SQLite.
pub(super) fn matching(backend: DbBackend, text: &str) -> SelectStatement {
    let column = match backend {
        DbBackend::Sqlite => "rowid",
        _ => "id",
    };
    Query::select()
        .column(column)
        .from(CONTAINS_TABLE)
        .cond_where(contains_table_matches(backend, text))
        .to_owned()
}

/// The rows of `person_contains` whose text contains `text` (already lowercase): an FTS5
/// phrase query on SQLite, a LIKE that the trigram index serves on PostgreSQL.
fn contains_table_matches(backend: DbBackend, text: &str) -> Condition {
    match backend {
        DbBackend::Sqlite => Condition::all().add(Expr::cust_with_values(
            "person_contains MATCH ?",
            [phrase_query(text)],
        )),
        _ => Condition::all().add(Expr::col((CONTAINS_TABLE, "text")).like(contains_pattern(text))),
    }
}

/// `LIKE '%text%'`, with the user's wildcards escaped.
pub(crate) fn contains_pattern(text: &str) -> LikeExpr {
    LikeExpr::new(format!("%{}%", escape_like(text))).escape('\\')
}

/// An FTS5 query for `text` as one phrase (quoted, quotes doubled).
///
/// The table's trigram tokenizer keeps positions and case (`detail='full'`,
/// `case_sensitive 1`, over text already lowercased like the LIKE's), so the phrase matches
/// exactly the rows whose text contains `text`: the same rows as the LIKE.
fn phrase_query(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// `lower(column)` starts with `prefix` (already lowercase).
///
/// The LIKE alone is exact, but no index serves it on either backend: SQLite uses none for
/// a LIKE with an ESCAPE clause, and PostgreSQL's `text_pattern_ops` needs the pattern as a
/// constant, which a cached generic plan of our parameterised statement does not have
/// (ADR 0020). So the same prefix is also given as a
/// byte-order range, `[prefix, prefix + U+10FFFF)`, which the migration's `lower(column)`
/// indexes serve (on PostgreSQL in the "C" collation, whose order is byte order).
pub(super) fn starts_with(
    backend: DbBackend,
    walk: bool,
    column: person::Column,
    prefix: &str,
) -> Condition {
    let lowered = || Expr::expr(Func::lower(Expr::col(column)));
    let like = lowered().like(LikeExpr::new(format!("{}%", escape_like(prefix))).escape('\\'));
    let condition = Condition::all().add(like);
    let end = format!("{prefix}{}", char::MAX);
    match backend {
        DbBackend::Sqlite if !walk => condition.add(lowered().gte(prefix)).add(lowered().lt(end)),
        DbBackend::Postgres => {
            let name = column.as_str();
            condition.add(Expr::cust_with_values(
                format!(
                    "lower(person.{name}) COLLATE \"C\" >= $1 AND lower(person.{name}) COLLATE \"C\" < $2"
                ),
                [prefix.to_owned(), end],
            ))
        }
        _ => condition,
    }
}

#[cfg(test)]
mod tests {
    use super::phrase_query;

    #[test]
    fn phrase_queries_quote_the_whole_text() {
        assert_eq!(phrase_query("o'brien x"), r#""o'brien x""#);
        assert_eq!(phrase_query("a\"b"), r#""a""b""#);
    }
}
