//! The `admin_alert` rows: an alert's episodes, raised and cleared by conditional writes so
//! that of nodes looking at once, one raises it.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};

use super::entity::admin_alert::{self, Column};
use crate::CaseloadError;

/// Starts an episode of alert `key` at `now` unless one is on; `true` if this call started it.
pub(crate) async fn raise<C: ConnectionTrait>(
    db: &C,
    key: &str,
    now: DateTime<Utc>,
) -> Result<bool, CaseloadError> {
    let row = admin_alert::ActiveModel {
        key: Set(key.to_owned()),
        raised_at: Set(now),
        cleared_at: Set(None),
    };
    let inserted = admin_alert::Entity::insert(row)
        .on_conflict(OnConflict::column(Column::Key).do_nothing().to_owned())
        .exec_without_returning(db)
        .await?;
    if inserted > 0 {
        return Ok(true);
    }
    let reopened = admin_alert::Entity::update_many()
        .col_expr(Column::RaisedAt, Expr::value(now))
        .col_expr(
            Column::ClearedAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(Column::Key.eq(key))
        .filter(Column::ClearedAt.is_not_null())
        .exec(db)
        .await?;
    Ok(reopened.rows_affected > 0)
}

/// Ends the episode of alert `key` that is on, if any; `true` if this call ended it.
pub(crate) async fn clear<C: ConnectionTrait>(
    db: &C,
    key: &str,
    now: DateTime<Utc>,
) -> Result<bool, CaseloadError> {
    let cleared = admin_alert::Entity::update_many()
        .col_expr(Column::ClearedAt, Expr::value(now))
        .filter(Column::Key.eq(key))
        .filter(Column::ClearedAt.is_null())
        .exec(db)
        .await?;
    Ok(cleared.rows_affected > 0)
}
