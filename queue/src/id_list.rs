//! "This column is one of these ids", written the way each backend does it best.
//!
//! On SQLite an `IN (?, ?, …)` list is the only way. On PostgreSQL the same list makes
//! a statement of its own for every list length: a batch that filters 1,000 people,
//! then the 987 it changed, prepares and plans two new statements, and the
//! connection's statement cache churns. `= ANY($1)` with the ids as one array
//! parameter is one statement whatever the length, prepared once per connection.

use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DbBackend};
use uuid::Uuid;

/// `column IN (ids…)` on SQLite, `column = ANY($1)` on PostgreSQL.
pub fn id_in<C: ColumnTrait>(
    backend: DbBackend,
    column: C,
    ids: impl IntoIterator<Item = Uuid>,
) -> Expr {
    match backend {
        DbBackend::Postgres => column.eq_any(ids),
        _ => column.is_in(ids),
    }
}
