//! The caseload search's SQL: counts, pages and the keyset walk's steps, as the planner
//! (`crate::search::planner`) chose them.
//!
//! Submodules: `queries` (the statements a plan builds) and `sql` (the backends' SQL
//! fragments).

mod queries;
mod sql;

pub(crate) use sql::contains_pattern;

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use queue::IdListFilter;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::name_ranges::RangedFilter;
use crate::CaseloadError;
use crate::search::COUNT_CAP;
use crate::search::planner::{FilterShape, Plan, SORT_AFTER_FILTER_MAX};
use crate::store::entity::person;
use queries::{MATCHES, condition, match_keys, page_query};
use sql::{contains_keys, matching};

/// PostgreSQL: a "contains"-only search in one pass over its matches, the page and how many
/// match from `COUNT(*) OVER ()` beside the sort: counting alone would re-read every match
/// before the page does (ADR 0020). Not on SQLite, whose FTS5 index counts without reading
/// any row, while the window would slow its sort.
///
/// `None` when the one pass does not answer: more than [`SORT_AFTER_FILTER_MAX`] match (the
/// pass stops there, and such a page is found by walking the name index), or the page lies
/// past the last match (no row carries the count).
pub(crate) async fn contains_page<C: ConnectionTrait>(
    db: &C,
    backend: DbBackend,
    text: &str,
    page: PageRequest,
) -> Result<Option<(u64, Vec<Uuid>)>, CaseloadError> {
    let keys = contains_keys(backend, text)
        .limit(SORT_AFTER_FILTER_MAX + 1)
        .to_owned();
    let query = page_query(keys, Plan::UseFilterIndexes, page)
        .expr_as(Expr::cust("COUNT(*) OVER ()"), "total")
        .to_owned();
    let rows = db.query_all(&query).await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let counted = u64::try_from(first.try_get_by_index::<i64>(1)?).unwrap_or_default();
    if counted > SORT_AFTER_FILTER_MAX {
        return Ok(None);
    }
    let ids = rows
        .iter()
        .map(|row| row.try_get_by_index(0))
        .collect::<Result<_, _>>()?;
    Ok(Some((counted, ids)))
}

/// How many people match `filter` within `scope` (a condition on `person`), exactly.
pub(crate) async fn count_within<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
) -> Result<u64, CaseloadError> {
    let condition = condition(db.get_database_backend(), filter, Plan::UseFilterIndexes)?;
    Ok(person::Entity::find()
        .filter(condition.add(scope))
        .count(db)
        .await?)
}

/// How many people match `filter`, stopping at [`COUNT_CAP`] + 1: the matches' sort keys
/// are counted, from indexes alone where [`match_keys`] can.
pub(crate) async fn count_matches<C: ConnectionTrait>(
    db: &C,
    backend: DbBackend,
    filter: &PersonFilter,
) -> Result<u64, CaseloadError> {
    let mut matches = match filter.only_contains() {
        // The "contains" index alone: counting needs no sort key.
        Some(text) => matching(backend, &text.to_lowercase()),
        None => Query::select()
            .expr(Expr::val(1))
            .from_subquery(
                match_keys(backend, filter, Plan::UseFilterIndexes)?,
                MATCHES,
            )
            .to_owned(),
    };
    matches.limit(COUNT_CAP + 1);
    let count = Query::select()
        .expr(Expr::cust("COUNT(*)"))
        .from_subquery(matches, "counted")
        .to_owned();
    let counted: i64 = match db.query_one(&count).await? {
        Some(row) => row.try_get_by_index(0)?,
        None => 0,
    };
    Ok(u64::try_from(counted).unwrap_or_default())
}

/// The ids of one page of the people matching `filter`, found by `plan`, in page order.
///
/// Only the sort keys are sorted and skipped, and only the page's rows are then read (by
/// the caller): an offset of 50,000 skips index entries, not table rows. Looking the
/// matches up, the sort is by an expression (`last_name || ''`), which keeps the planner off
/// the name index (see `search_people`).
pub(crate) async fn page_ids<C: ConnectionTrait>(
    db: &C,
    backend: DbBackend,
    filter: &PersonFilter,
    plan: Plan,
    page: PageRequest,
) -> Result<Vec<Uuid>, CaseloadError> {
    if let (Plan::WalkNameRanges, Some(ranged)) = (plan, RangedFilter::of(filter)) {
        let offset = page.page.saturating_mul(page.page_size);
        return super::name_ranges::page(db, ranged, offset, page.page_size).await;
    }
    let keys = match_keys(backend, filter, plan)?;
    let rows = db.query_all(&page_query(keys, plan, page)).await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get_by_index(0))
        .collect::<Result<_, _>>()?)
}

/// The next ids a walk over `filter` may find people at: the first `limit` after `after`,
/// in id order (see [`queries::walk_candidates`]); `None` for a filter without candidates.
pub(crate) async fn walk_candidates<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Option<Vec<Uuid>>, CaseloadError> {
    let Some(query) = queries::walk_candidates(db.get_database_backend(), filter, after, limit)?
    else {
        return Ok(None);
    };
    Ok(Some(
        db.query_all(&query)
            .await?
            .iter()
            .map(|row| row.try_get_by_index(0))
            .collect::<Result<_, _>>()?,
    ))
}

/// The people among the candidates `ids` who match `filter` within `scope`, by id.
pub(crate) async fn matching_among<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
    ids: Vec<Uuid>,
) -> Result<Vec<person::Model>, CaseloadError> {
    let backend = db.get_database_backend();
    // Kept off the filter's indexes, SQLite looks up these ids only.
    let condition = condition(backend, filter, Plan::WalkSortIndex)?
        .add(scope)
        .add(person::Column::Id.in_id_list(backend, ids));
    Ok(person::Entity::find()
        .filter(condition)
        .order_by_asc(person::Column::Id)
        .all(db)
        .await?)
}

/// The first `limit` people after `after` (by id) who match `filter` within `scope`, found
/// by `plan`.
pub(crate) async fn matching_after<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    plan: Plan,
    scope: Condition,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<person::Model>, CaseloadError> {
    let mut condition = condition(db.get_database_backend(), filter, plan)?.add(scope);
    if let Some(after) = after {
        condition = condition.add(person::Column::Id.gt(after));
    }
    Ok(person::Entity::find()
        .filter(condition)
        .order_by_asc(person::Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}
