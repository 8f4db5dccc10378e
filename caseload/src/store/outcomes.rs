//! The `task_outcome` rows: each person's outcome in a bulk task, written in the batch's
//! transaction, read a task at a time in person order, found by person, and forgotten
//! with their task.

use bulkq_types::actions::ActionKind;
use bulkq_types::outcomes::PersonOutcome;
use queue::{ListedIn, id_rows};
use sea_orm::sea_query::{Expr, ExprTrait, Order, Query};
use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, Statement};
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

/// The history table that already names, one row per `(task_id, person_id)` (a unique
/// index), everyone a task of `kind` changed: their `changed` outcome is read from it rather
/// than written a second time beside it. The email send log is not one: it forgets finished
/// sends before the queue forgets their task.
pub(crate) fn change_history(kind: ActionKind) -> Option<&'static str> {
    match kind {
        ActionKind::ProgramStatusChange => Some("program_status_change"),
        ActionKind::CoachReassignment => Some("coach_change"),
        ActionKind::EarlyAlert => Some("early_alert"),
        ActionKind::Export | ActionKind::Watch | ActionKind::Unwatch | ActionKind::Email => None,
    }
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

/// Up to `limit` of task `task_id`'s outcomes after person `after`, in person id order: the
/// recorded ones and, for a `kind` with a [change history](change_history), the changed
/// ones from it, each side read by its `(task_id, person_id)` key, so a page costs the same
/// however deep it is. A person in both (a batch run twice by mistake finds its own history
/// rows and calls them unchanged) is listed once, as changed.
pub(crate) async fn page<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    kind: ActionKind,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<OutcomeRow>, CaseloadError> {
    let backend = db.get_database_backend();
    let mark = |n: usize| match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => format!("?{n}"),
    };
    let (task, limit_mark, after_mark) = (mark(1), mark(2), mark(3));
    let after_condition = match after {
        Some(_) => format!("AND person_id > {after_mark}"),
        None => String::new(),
    };
    let side = |outcome: &str, table: &str| {
        format!(
            "SELECT * FROM (SELECT person_id, {outcome} AS outcome FROM {table} \
             WHERE task_id = {task} {after_condition} ORDER BY person_id LIMIT {limit_mark}) AS {table}"
        )
    };
    let mut sides = vec![side("outcome", TABLE)];
    if let Some(history) = change_history(kind) {
        let changed = format!("CAST({} AS smallint)", PersonOutcome::Changed.code());
        sides.push(side(&changed, history));
    }
    // The lowest code first: `changed` (1) wins over another outcome of the same person.
    let sql = format!(
        "SELECT o.person_id, o.outcome, p.school_id, p.first_name, p.last_name \
         FROM ({}) AS o LEFT JOIN person p ON p.id = o.person_id \
         ORDER BY o.person_id, o.outcome LIMIT {limit_mark}",
        sides.join(" UNION ALL ")
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut values = vec![task_id.into(), limit.into()];
    if let Some(after) = after {
        values.push(after.into());
    }
    let statement = Statement::from_sql_and_values(backend, sql, values);
    let mut rows = OutcomeRow::find_by_statement(statement).all(db).await?;
    rows.dedup_by_key(|row| row.person_id);
    Ok(rows)
}

/// Where the tasks with an outcome for `person_id` are listed, as a task list's filter: the
/// recorded outcomes and every change history.
pub(crate) fn tasks_touching(person_id: Uuid) -> ListedIn {
    let histories = ActionKind::ALL.into_iter().filter_map(change_history);
    ListedIn {
        tables: std::iter::once(TABLE)
            .chain(histories)
            .map(Into::into)
            .collect(),
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
