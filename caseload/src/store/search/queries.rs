//! The queries a search plan runs: a filter's condition, its matches' sort keys, a walk's
//! candidates, and a page of keys, as the planner (`crate::search::planner`) chose them.

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use sea_orm::sea_query::{
    ColumnRef, Expr, ExprTrait, IntoColumnRef, Order, Query, SelectStatement, UnionType,
};
use sea_orm::{ColumnTrait, Condition, DbBackend};
use uuid::Uuid;

use super::sql::{contains, contains_keys, starts_with};
use crate::CaseloadError;
use crate::search::planner::{FilterShape, Plan};
use crate::search::validate_filter;
use crate::store::entity::{early_alert, person, person_watch};

/// The columns a name word may start; each has a covering index (`idx_person_search_*`) that
/// holds the sort key and every column a name search tests.
const NAME_COLUMNS: [person::Column; 3] = [
    person::Column::FirstName,
    person::Column::LastName,
    person::Column::SchoolId,
];

/// The order of every search: last name, first name, then id (namesakes page stably).
pub(super) const SORT_KEY: [person::Column; 3] = [
    person::Column::LastName,
    person::Column::FirstName,
    person::Column::Id,
];

/// The alias of the subquery of matching sort keys that pages and counts read.
pub(super) const MATCHES: &str = "matches";

/// The sort key (`last_name, first_name, id`) of every person matching `filter`.
///
/// Looking the matches up, no `person` row is read where an index holds the keys:
/// - a name search is the UNION of one SELECT per column its longest word may start, each
///   served by that column's covering index (which also holds what the other words test),
///   ten times faster than from the table (ADR 0020). The OR of the three columns in one
///   SELECT would visit the table for every match on both backends;
/// - a "contains" search alone reads narrow tables only ([`contains_keys`]).
pub(super) fn match_keys(
    backend: DbBackend,
    filter: &PersonFilter,
    plan: Plan,
) -> Result<SelectStatement, CaseloadError> {
    validate_filter(filter)?;
    let keys = |condition: Condition| {
        Query::select()
            .columns(SORT_KEY)
            .from(person::Entity)
            .cond_where(condition)
            .to_owned()
    };
    if plan != Plan::UseFilterIndexes {
        return Ok(keys(condition(backend, filter, plan)?));
    }
    if let Some(text) = filter.only_contains() {
        return Ok(contains_keys(backend, &text.to_lowercase()));
    }
    let Some((word, rest)) = filter.split_name_word() else {
        return Ok(keys(condition(backend, filter, plan)?));
    };
    let rest = condition(backend, &rest, plan)?;
    Ok(union_of_name_columns(|column| {
        keys(rest.clone().add(starts_with(backend, false, column, &word)))
    }))
}

/// The UNION of `branch` over every column a name word may start: each branch is served by
/// that column's covering index, where an OR of the columns would read the table.
fn union_of_name_columns(branch: impl Fn(person::Column) -> SelectStatement) -> SelectStatement {
    let [first, others @ ..] = NAME_COLUMNS;
    let mut union = branch(first);
    for column in others {
        union.union(UnionType::Distinct, branch(column));
    }
    union
}

/// The next ids a walk over `filter` may find people at: the first `limit` after `after`,
/// in id order, that its name word, its watch list or the open alerts name, read from
/// indexes alone; `None` for a filter with none of them.
///
/// Why: a walk's batches go in id order, which no name index keeps, so a batch found
/// through the filter's indexes read every match's row (and sorted them all) to keep
/// `limit`, and a walk of many short batches read every match many times. Looking the
/// candidates up in covering indexes reads only their index entries; the caller then reads
/// the rows of `limit` candidates at most and tests the whole filter and scope on them.
pub(super) fn walk_candidates(
    backend: DbBackend,
    filter: &PersonFilter,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Option<SelectStatement>, CaseloadError> {
    validate_filter(filter)?;
    let after_cursor = |column: ColumnRef| {
        after.map_or_else(Condition::all, |after| {
            Condition::all().add(Expr::col(column).gt(after))
        })
    };
    let candidates = if let Some((word, _)) = filter.split_name_word() {
        union_of_name_columns(|column| {
            Query::select()
                .column(person::Column::Id)
                .from(person::Entity)
                .cond_where(starts_with(backend, false, column, &word))
                .cond_where(after_cursor(
                    (person::Entity, person::Column::Id).into_column_ref(),
                ))
                .to_owned()
        })
    } else if let Some(staff_user_id) = filter.watched_by {
        // The watch table's primary key starts (staff_user_id, person_id): one range.
        let person_id = (person_watch::Entity, person_watch::Column::PersonId);
        Query::select()
            .expr_as(Expr::col(person_id), person::Column::Id)
            .from(person_watch::Entity)
            .and_where(person_watch::Column::StaffUserId.eq(staff_user_id))
            .cond_where(after_cursor(person_id.into_column_ref()))
            .to_owned()
    } else if filter.has_open_alerts {
        // `idx_early_alert_open` lists the people with open alerts: one range.
        let person_id = (early_alert::Entity, early_alert::Column::PersonId);
        Query::select()
            .distinct()
            .expr_as(Expr::col(person_id), person::Column::Id)
            .from(early_alert::Entity)
            .and_where(early_alert::Column::ClosedAt.is_null())
            .cond_where(after_cursor(person_id.into_column_ref()))
            .to_owned()
    } else {
        return Ok(None);
    };
    Ok(Some(
        Query::select()
            .column((MATCHES, person::Column::Id))
            .from_subquery(candidates, MATCHES)
            .order_by((MATCHES, person::Column::Id), Order::Asc)
            .limit(limit)
            .to_owned(),
    ))
}

/// The query of [`page_ids`](super::page_ids): the ids of one page of `keys`, sorted.
pub(super) fn page_query(keys: SelectStatement, plan: Plan, page: PageRequest) -> SelectStatement {
    let last_name = match plan {
        Plan::UseFilterIndexes => Expr::cust(format!("{MATCHES}.last_name || ''")),
        Plan::WalkSortIndex | Plan::WalkFilterIndex | Plan::WalkNameRanges => {
            Expr::col((MATCHES, person::Column::LastName))
        }
    };
    Query::select()
        .column((MATCHES, person::Column::Id))
        .from_subquery(keys, MATCHES)
        .order_by_expr(last_name, Order::Asc)
        .order_by((MATCHES, person::Column::FirstName), Order::Asc)
        .order_by((MATCHES, person::Column::Id), Order::Asc)
        .limit(page.page_size)
        .offset(page.page.saturating_mul(page.page_size))
        .to_owned()
}

/// The SQL condition for a filter.
pub(super) fn condition(
    backend: DbBackend,
    filter: &PersonFilter,
    plan: Plan,
) -> Result<Condition, CaseloadError> {
    validate_filter(filter)?;
    // On SQLite, a walk must not offer the planner any filter index (see `Plan`).
    let walk = backend == DbBackend::Sqlite && plan == Plan::WalkSortIndex;
    let mut all = Condition::all();
    for word in filter.name_words() {
        let word = word.to_lowercase();
        all = all.add(
            Condition::any()
                .add(starts_with(backend, walk, person::Column::LastName, &word))
                .add(starts_with(backend, walk, person::Column::FirstName, &word))
                .add(starts_with(backend, walk, person::Column::SchoolId, &word)),
        );
    }
    if let Some(email) = filter
        .email
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        all = all.add(starts_with(
            backend,
            walk,
            person::Column::Email,
            &email.to_lowercase(),
        ));
    }
    if let Some(text) = filter.contains_text() {
        all = all.add(contains(backend, walk, &text.to_lowercase()));
    }
    // SQLite's unary `+` leaves the value alone but disqualifies the column from index use.
    if let Some(status) = &filter.program_status {
        all = all.add(match walk {
            true => Expr::cust_with_values("+person.program_status = ?", [status.as_str()]),
            false => person::Column::ProgramStatus.eq(status.as_str()),
        });
    }
    if let Some(coach_id) = filter.coach_id {
        all = all.add(match walk {
            true => Expr::cust_with_values("+person.coach_id = ?", [coach_id]),
            false => person::Column::CoachId.eq(coach_id),
        });
    }
    if let Some(staff_user_id) = filter.watched_by {
        // `IN (subquery)` rather than `EXISTS`: both planners can then start from the few
        // watched people instead of probing the watch table once per person.
        let watched = Query::select()
            .column(person_watch::Column::PersonId)
            .from(person_watch::Entity)
            .and_where(person_watch::Column::StaffUserId.eq(staff_user_id))
            .to_owned();
        all = all.add(match walk {
            true => Expr::cust("+person.id").in_subquery(watched),
            false => person::Column::Id.in_subquery(watched),
        });
    }
    if filter.has_open_alerts {
        let alerted = Query::select()
            .column(early_alert::Column::PersonId)
            .from(early_alert::Entity)
            .and_where(early_alert::Column::ClosedAt.is_null())
            .to_owned();
        all = all.add(match walk {
            true => Expr::cust("+person.id").in_subquery(alerted),
            false => person::Column::Id.in_subquery(alerted),
        });
    }
    Ok(all)
}
