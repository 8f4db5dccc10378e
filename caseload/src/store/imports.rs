//! What a people import records as it runs: the school ids it has claimed
//! (`people_import_seen`), the rows it could not import (`people_import_problem`), and whom
//! a full sync retires (the people it did not claim).

use std::collections::HashSet;

use bulkq_types::people_import::RowProblem;
use bulkq_types::person_records::RETIRED_STATUS;
use queue::text_rows;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{ConnectionTrait, DbBackend, Statement, StatementBuilder};
use uuid::Uuid;

use crate::CaseloadError;
use crate::people_sync::ResolvedRecord;

/// Claims each record's school id for `import_id`, in one statement; returns the school
/// ids newly claimed (those an earlier row claimed are left out).
pub(crate) async fn claim_school_ids<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    records: &[(u64, ResolvedRecord)],
) -> Result<HashSet<String>, CaseloadError> {
    let backend = db.get_database_backend();
    let school_ids = records.iter().map(|(_, record)| record.school_id.clone());
    let (rows, list) = text_rows(backend, 2, school_ids);
    let import = match backend {
        DbBackend::Postgres => "$1",
        _ => "?",
    };
    // One statement for every batch size (ADR 0014); `WHERE true` tells SQLite's parser
    // that `ON CONFLICT` is the upsert, not a join's `ON`.
    let insert = Statement::from_sql_and_values(
        backend,
        format!(
            "INSERT INTO people_import_seen (import_id, school_id) \
             SELECT {import}, rows.value FROM {rows} WHERE true \
             ON CONFLICT (import_id, school_id) DO NOTHING RETURNING school_id"
        ),
        [import_id.into(), list],
    );
    let mut claimed: HashSet<String> = HashSet::with_capacity(records.len());
    for row in db.query_all_raw(insert).await? {
        claimed.insert(row.try_get_by_index::<String>(0)?);
    }
    Ok(claimed)
}

/// Records `problems` for the import's error report (a batch run again finds its own rows).
pub(crate) async fn record_problems<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    problems: &[RowProblem],
) -> Result<(), CaseloadError> {
    for chunk in problems.chunks(500) {
        let mut insert = Query::insert();
        insert
            .into_table("people_import_problem")
            .columns(["import_id", "line", "school_id", "message"])
            .on_conflict(
                OnConflict::columns(["import_id", "line"])
                    .do_nothing()
                    .to_owned(),
            );
        for problem in chunk {
            insert.values_panic([
                import_id.into(),
                (problem.line as i64).into(),
                problem.school_id.clone().into(),
                problem.message.clone().into(),
            ]);
        }
        db.execute(&insert).await?;
    }
    Ok(())
}

/// The import's problems from line `after_line` on, at most `limit`, by line.
pub(crate) async fn problems_after<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    after_line: u64,
    limit: u64,
) -> Result<Vec<RowProblem>, CaseloadError> {
    let mut select = Query::select();
    select
        .columns(["line", "school_id", "message"])
        .from("people_import_problem")
        .and_where(Expr::col("import_id").eq(import_id))
        .and_where(Expr::col("line").gt(after_line as i64))
        .order_by("line", sea_orm::Order::Asc)
        .limit(limit);
    let rows = db
        .query_all_raw(StatementBuilder::build(&select, &db.get_database_backend()))
        .await?;
    rows.iter()
        .map(|row| {
            Ok(RowProblem {
                line: row.try_get::<i64>("", "line")? as u64,
                school_id: row.try_get("", "school_id")?,
                message: row.try_get("", "message")?,
            })
        })
        .collect()
}

/// School ids of up to `limit` people not retired whom the import did not claim, after
/// `after` (by school id): whom a full sync retires next.
pub(crate) async fn unclaimed_after<C: ConnectionTrait>(
    db: &C,
    import_id: Uuid,
    after: &str,
    limit: u64,
) -> Result<Vec<String>, CaseloadError> {
    let mut claimed = Query::select();
    claimed
        .expr(Expr::val(1))
        .from("people_import_seen")
        .and_where(Expr::col(("people_import_seen", "import_id")).eq(import_id))
        .and_where(Expr::col(("people_import_seen", "school_id")).equals(("person", "school_id")));
    let mut select = Query::select();
    select
        .column(("person", "school_id"))
        .from("person")
        .and_where(Expr::col(("person", "program_status")).ne(RETIRED_STATUS))
        .and_where(Expr::col(("person", "school_id")).gt(after))
        .and_where(Expr::exists(claimed).not())
        .order_by(("person", "school_id"), sea_orm::Order::Asc)
        .limit(limit);
    let rows = db
        .query_all_raw(StatementBuilder::build(&select, &db.get_database_backend()))
        .await?;
    rows.iter()
        .map(|row| Ok(row.try_get_by_index::<String>(0)?))
        .collect()
}
