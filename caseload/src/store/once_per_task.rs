//! The insert behind every "once per task and person" record (status history, email claims).

use sea_orm::sea_query::{OnConflict, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use uuid::Uuid;

use crate::CaseloadError;

/// Rows per INSERT statement. Every full chunk is the same statement, so it is compiled
/// once per connection and then found in the statement cache; only a batch's last, shorter
/// chunk is new. (One statement per batch, sized to the batch, was a new program of up to
/// 30,000 parameters every time.) Well under SQLite's limit of 32,766 parameters.
const ROWS_PER_STATEMENT: usize = 500;

/// Inserts `rows` (values for `columns`, in order) into `entity`'s table, skipping any row
/// whose `(task, person)` key the table already holds, and returns the person ids actually
/// inserted, in statements of [`ROWS_PER_STATEMENT`] rows.
///
/// `ON CONFLICT DO NOTHING … RETURNING` is what makes re-running a batch harmless: the
/// caller acts only on the people returned. Catching a unique violation instead would abort
/// the caller's whole PostgreSQL transaction.
pub(super) async fn insert_new<C, E>(
    db: &C,
    columns: &[E::Column],
    (task, person): (E::Column, E::Column),
    rows: impl IntoIterator<Item = Vec<SimpleExpr>>,
) -> Result<Vec<Uuid>, CaseloadError>
where
    C: ConnectionTrait,
    E: EntityTrait + Default,
{
    let rows: Vec<Vec<SimpleExpr>> = rows.into_iter().collect();
    let mut inserted = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut insert = Query::insert();
        insert
            .into_table(E::default())
            .columns(columns.iter().copied())
            .on_conflict(OnConflict::columns([task, person]).do_nothing().to_owned())
            .returning_col(person);
        for row in chunk {
            insert
                .values(row.iter().cloned())
                .map_err(|e| DbErr::Custom(e.to_string()))?;
        }
        for row in db.query_all(&insert).await? {
            inserted.push(row.try_get_by_index::<Uuid>(0)?);
        }
    }
    Ok(inserted)
}
