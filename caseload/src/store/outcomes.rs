//! The `task_outcome` rows: each person's outcome in a bulk task, written in the batch's
//! transaction, read a task at a time in person order, found by person, and forgotten
//! with their task.

use bulkq_types::outcomes::PersonOutcome;
use queue::{ListedIn, id_rows};
use sea_orm::sea_query::{Expr, ExprTrait, JoinType, Order, Query};
use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, Statement, StatementBuilder};
use uuid::Uuid;

use crate::CaseloadError;

const TABLE: &str = "task_outcome";

/// Records `outcome` for `person_ids` in task `task_id`; a person recorded before gets the
/// new outcome (an email deferred, then sent). One statement for every batch size.
pub(crate) async fn record<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    outcome: PersonOutcome,
    person_ids: &[Uuid],
) -> Result<(), CaseloadError> {
    if person_ids.is_empty() {
        return Ok(());
    }
    let backend = db.get_database_backend();
    let (ids, id_list) = id_rows(backend, 3, person_ids.iter().copied());
    let (task, code) = match backend {
        DbBackend::Postgres => ("$1", "$2"),
        _ => ("?", "?"),
    };
    // `WHERE true`: SQLite's parser then reads `ON CONFLICT` as the upsert, not a join's.
    let upsert = Statement::from_sql_and_values(
        backend,
        format!(
            "INSERT INTO {TABLE} (task_id, person_id, outcome) \
             SELECT {task}, ids.id, {code} FROM {ids} WHERE true \
             ON CONFLICT (task_id, person_id) DO UPDATE SET outcome = excluded.outcome"
        ),
        [task_id.into(), outcome.code().into(), id_list],
    );
    db.execute_raw(upsert).await?;
    Ok(())
}

/// One person's outcome, with what the caseload knows of them (nothing for an unknown id).
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub(crate) struct OutcomeRow {
    pub person_id: Uuid,
    pub outcome: i16,
    pub school_id: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
}

/// Up to `limit` of task `task_id`'s outcomes after person `after`, in person id order
/// (the table's key: a page costs the same however deep it is).
pub(crate) async fn page<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<OutcomeRow>, CaseloadError> {
    let mut select = Query::select();
    select
        .expr_as(Expr::col(("o", "person_id")), "person_id")
        .expr_as(Expr::col(("o", "outcome")), "outcome")
        .expr_as(Expr::col(("p", "school_id")), "school_id")
        .expr_as(Expr::col(("p", "first_name")), "first_name")
        .expr_as(Expr::col(("p", "last_name")), "last_name")
        .from_as(TABLE, "o")
        .join_as(
            JoinType::LeftJoin,
            "person",
            "p",
            Expr::col(("p", "id")).equals(("o", "person_id")),
        )
        .and_where(Expr::col(("o", "task_id")).eq(task_id))
        .order_by(("o", "person_id"), Order::Asc)
        .limit(limit);
    if let Some(after) = after {
        select.and_where(Expr::col(("o", "person_id")).gt(after));
    }
    let statement = StatementBuilder::build(&select, &db.get_database_backend());
    Ok(OutcomeRow::find_by_statement(statement).all(db).await?)
}

/// The tasks with an outcome for `person_id`, as a task list's filter.
pub(crate) fn tasks_touching(person_id: Uuid) -> ListedIn {
    ListedIn {
        table: TABLE.into(),
        task_column: "task_id".into(),
        key_column: "person_id".into(),
        key: person_id,
    }
}

/// The first task id after `after` (in id order) that has outcomes: one index seek each,
/// so the tasks with outcomes are visited without reading their rows.
pub(crate) async fn next_task<C: ConnectionTrait>(
    db: &C,
    after: Option<Uuid>,
) -> Result<Option<Uuid>, CaseloadError> {
    let mut select = Query::select();
    select
        .column("task_id")
        .from(TABLE)
        .order_by("task_id", Order::Asc)
        .limit(1);
    if let Some(after) = after {
        select.and_where(Expr::col("task_id").gt(after));
    }
    let row = db.query_one(&select).await?;
    Ok(row.map(|row| row.try_get_by_index::<Uuid>(0)).transpose()?)
}

/// Deletes up to `limit` outcomes of task `task_id`; returns how many.
pub(crate) async fn delete_some<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    limit: u64,
) -> Result<u64, CaseloadError> {
    let some = Query::select()
        .column("person_id")
        .from(TABLE)
        .and_where(Expr::col("task_id").eq(task_id))
        .limit(limit)
        .to_owned();
    let delete = Query::delete()
        .from_table(TABLE)
        .and_where(Expr::col("task_id").eq(task_id))
        .and_where(Expr::col("person_id").in_subquery(some))
        .to_owned();
    Ok(db.execute(&delete).await?.rows_affected())
}
