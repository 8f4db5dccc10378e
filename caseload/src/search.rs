//! Caseload search: filters, a stable sort and server-side paging.

use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CaseloadError;
use crate::entity::person;

/// The most rows one page may hold; larger requests are rejected, not silently truncated.
pub const MAX_PAGE_SIZE: u64 = 200;

/// Which people a search (or a bulk action's saved query) selects. Empty means everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonFilter {
    /// Words that must each start a first name, last name or school id (case-insensitive).
    pub name: Option<String>,
    /// Only people in this program status (by code).
    pub program_status: Option<String>,
    /// Only people coached by this staff user ("my caseload").
    pub coach_id: Option<Uuid>,
}

/// One page of a search, numbered from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    pub page: u64,
    pub page_size: u64,
}

/// A person as listed in the caseload table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonSummary {
    pub id: Uuid,
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub program_status: String,
    pub coach_id: Option<Uuid>,
}

impl From<person::Model> for PersonSummary {
    fn from(row: person::Model) -> Self {
        PersonSummary {
            id: row.id,
            school_id: row.school_id,
            first_name: row.first_name,
            last_name: row.last_name,
            email: row.email,
            program_status: row.program_status,
            coach_id: row.coach_id,
        }
    }
}

/// One page of people plus the number matching the filter in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonPage {
    pub people: Vec<PersonSummary>,
    pub total: u64,
    pub page: u64,
    pub page_size: u64,
}

/// Finds the people matching `filter`, sorted by last name, first name, then id (so paging
/// is stable even among namesakes).
pub async fn search_people<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    page: PageRequest,
) -> Result<PersonPage, CaseloadError> {
    if page.page_size == 0 || page.page_size > MAX_PAGE_SIZE {
        return Err(CaseloadError::Invalid(format!(
            "page_size must be between 1 and {MAX_PAGE_SIZE}"
        )));
    }
    let paginator = person::Entity::find()
        .filter(condition(filter))
        .order_by_asc(person::Column::LastName)
        .order_by_asc(person::Column::FirstName)
        .order_by_asc(person::Column::Id)
        .paginate(db, page.page_size);
    let total = paginator.num_items().await?;
    let people = paginator
        .fetch_page(page.page)
        .await?
        .into_iter()
        .map(PersonSummary::from)
        .collect();
    Ok(PersonPage {
        people,
        total,
        page: page.page,
        page_size: page.page_size,
    })
}

/// The SQL condition for a filter.
fn condition(filter: &PersonFilter) -> Condition {
    let mut all = Condition::all();
    for word in filter.name.iter().flat_map(|name| name.split_whitespace()) {
        let pattern = LikeExpr::new(format!("{}%", escape_like(&word.to_lowercase()))).escape('\\');
        let starts = |column: person::Column| {
            Expr::expr(Func::lower(Expr::col(column))).like(pattern.clone())
        };
        all = all.add(
            Condition::any()
                .add(starts(person::Column::LastName))
                .add(starts(person::Column::FirstName))
                .add(starts(person::Column::SchoolId)),
        );
    }
    if let Some(status) = &filter.program_status {
        all = all.add(person::Column::ProgramStatus.eq(status.as_str()));
    }
    if let Some(coach_id) = filter.coach_id {
        all = all.add(person::Column::CoachId.eq(coach_id));
    }
    all
}

/// Escapes LIKE's wildcards so user input matches literally.
fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape_like;

    #[test]
    fn wildcards_in_user_input_match_literally() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
        assert_eq!(escape_like("o'brien"), "o'brien");
    }
}
