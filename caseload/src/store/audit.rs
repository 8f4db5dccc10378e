//! The `audit_event` rows: the audit trail written beside the act it records, read newest
//! first a page at a time, and forgotten past its retention.

use bulkq_types::audit::AuditSearch;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, EntityTrait, IntoActiveModel,
    QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::entity::audit_event::{self, Column};
use super::search::contains_pattern;
use crate::CaseloadError;

/// Writes one entry.
pub(crate) async fn insert<C: ConnectionTrait>(
    db: &C,
    entry: audit_event::Model,
) -> Result<(), CaseloadError> {
    entry.into_active_model().insert(db).await?;
    Ok(())
}

/// Up to `limit` entries matching `search`, newest first, after `search.before` (ids grow
/// with time) or, for the CSV's later pages, after `after`.
pub(crate) async fn page<C: ConnectionTrait>(
    db: &C,
    search: &AuditSearch,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<audit_event::Model>, CaseloadError> {
    let mut condition = Condition::all();
    if let Some(before) = after.or(search.before) {
        condition = condition.add(Column::Id.lt(before));
    }
    if let Some(who) = &search.who {
        condition = condition.add(Column::Actor.eq(who.as_str()));
    }
    if let Some(area) = search.area {
        condition = condition.add(Column::Area.eq(area.as_str()));
    }
    if let Some(target) = &search.target {
        condition = condition.add(
            Expr::expr(Func::lower(Expr::col(Column::Targets)))
                .like(contains_pattern(&target.to_lowercase())),
        );
    }
    if let Some(from) = search.span.from {
        condition = condition.add(Column::At.gte(from));
    }
    if let Some(until) = search.span.until {
        condition = condition.add(Column::At.lt(until));
    }
    Ok(audit_event::Entity::find()
        .filter(condition)
        .order_by_desc(Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}

/// Deletes at most `limit` entries written before `before`; answers how many.
pub(crate) async fn delete_before<C: ConnectionTrait>(
    db: &C,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<u64, CaseloadError> {
    let ids: Vec<Uuid> = audit_event::Entity::find()
        .select_only()
        .column(Column::Id)
        .filter(Column::At.lt(before))
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let deleted = audit_event::Entity::delete_many()
        .filter(Column::Id.is_in(ids))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}
