//! The `alert_reason` rows: the reasons an early alert may give, which admins manage.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};

use super::entity::alert_reason;
use crate::CaseloadError;

/// The reasons, in pick-list order; retired ones only if `with_retired`.
pub(crate) async fn list<C: ConnectionTrait>(
    db: &C,
    with_retired: bool,
) -> Result<Vec<alert_reason::Model>, CaseloadError> {
    let mut query = alert_reason::Entity::find()
        .order_by_asc(alert_reason::Column::SortOrder)
        .order_by_asc(alert_reason::Column::Code);
    if !with_retired {
        query = query.filter(alert_reason::Column::RetiredAt.is_null());
    }
    Ok(query.all(db).await?)
}

/// The reason `code`, retired or not, if there is one.
pub(crate) async fn find<C: ConnectionTrait>(
    db: &C,
    code: String,
) -> Result<Option<alert_reason::Model>, CaseloadError> {
    Ok(alert_reason::Entity::find_by_id(code).one(db).await?)
}

/// Brings the retired reason `row` back under the name `name`.
pub(crate) async fn bring_back<C: ConnectionTrait>(
    db: &C,
    row: alert_reason::Model,
    name: &str,
) -> Result<(), CaseloadError> {
    let mut row: alert_reason::ActiveModel = row.into();
    row.name = Set(name.to_owned());
    row.retired_at = Set(None);
    row.update(db).await?;
    Ok(())
}

/// Adds the reason `code` named `name`, last in pick-list order.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    code: String,
    name: &str,
) -> Result<(), CaseloadError> {
    let last: Option<i32> = alert_reason::Entity::find()
        .select_only()
        .expr_as(
            Func::max(Expr::col(alert_reason::Column::SortOrder)),
            "last",
        )
        .into_tuple()
        .one(db)
        .await?
        .flatten();
    alert_reason::ActiveModel {
        code: Set(code),
        name: Set(name.to_owned()),
        sort_order: Set(last.map_or(0, |last| last + 1)),
        retired_at: Set(None),
    }
    .insert(db)
    .await?;
    Ok(())
}

/// Retires the reason `code` at `now` unless it is retired already; returns how many
/// reasons it retired (0 or 1).
pub(crate) async fn retire<C: ConnectionTrait>(
    db: &C,
    code: &str,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    Ok(alert_reason::Entity::update_many()
        .col_expr(alert_reason::Column::RetiredAt, Expr::value(now))
        .filter(alert_reason::Column::Code.eq(code))
        .filter(alert_reason::Column::RetiredAt.is_null())
        .exec(db)
        .await?
        .rows_affected)
}
