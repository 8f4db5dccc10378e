//! Caseload search for the dashboard; a bulk action over everyone a search matches targets
//! the filter the search ran ([`CaseloadResults::filter`]).

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PersonPage;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// People per caseload page.
pub const PAGE_SIZE: u64 = 50;

/// A caseload search as the page's URL carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseloadQuery {
    /// Name or school id words (prefix match); empty for everyone.
    pub q: String,
    /// A program status code; empty for any.
    pub status: String,
    /// Only people the signed-in user coaches ("My caseload"). Absent means false, as an
    /// unticked checkbox sends nothing.
    #[serde(default)]
    pub mine: bool,
    /// Only people the signed-in user watches.
    #[serde(default)]
    pub watched: bool,
    /// Only people with an open early alert.
    #[serde(default)]
    pub alerts: bool,
    /// Zero-based page number.
    pub page: u64,
}

/// A program status as pick lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramStatusOption {
    pub code: String,
    pub name: String,
}

/// A page of a caseload search, and the filter it ran: what a bulk action over everyone the
/// search matches targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseloadResults {
    pub page: PersonPage,
    pub filter: PersonFilter,
}

/// Someone people may be moved to, as the coach pick list shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoachOption {
    pub username: String,
    pub display_name: String,
}

/// The enabled accounts, by username: who people may be moved to.
#[server(endpoint = "coaches")]
pub async fn list_coaches() -> Result<Vec<CoachOption>, AppError> {
    crate::api::ssr::respond(ssr_impl::coaches()).await
}

/// Searches the caseload: people matching the query, 50 a page, in name order.
#[server(endpoint = "search_caseload")]
pub async fn search_caseload(query: CaseloadQuery) -> Result<CaseloadResults, AppError> {
    crate::api::ssr::respond(ssr_impl::search(query)).await
}

/// The program statuses, in pick-list order.
#[server(endpoint = "program_statuses")]
pub async fn list_program_statuses() -> Result<Vec<ProgramStatusOption>, AppError> {
    crate::api::ssr::respond(ssr_impl::program_statuses()).await
}

#[cfg(feature = "ssr")]
pub(crate) mod ssr_impl {
    use bulkq_types::people::PageRequest;
    use caseload::users::StaffUser;

    use super::*;
    use crate::api::ssr::{db, require_user};

    /// Longest search text accepted; anything longer is not a name.
    const MAX_QUERY_LEN: usize = 200;

    /// The people a search selects, for `user` (whose id "mine" and "watched" refer to).
    pub fn person_filter(
        query: &CaseloadQuery,
        user: &StaffUser,
    ) -> Result<PersonFilter, AppError> {
        if query.q.len() > MAX_QUERY_LEN {
            return Err(AppError::invalid(format!(
                "The search text may have at most {MAX_QUERY_LEN} characters."
            )));
        }
        Ok(PersonFilter {
            name: Some(query.q.trim().to_owned()).filter(|q| !q.is_empty()),
            program_status: Some(query.status.clone()).filter(|s| !s.is_empty()),
            coach_id: query.mine.then_some(user.id),
            watched_by: query.watched.then_some(user.id),
            has_open_alerts: query.alerts,
            ..PersonFilter::default()
        })
    }

    pub async fn search(query: CaseloadQuery) -> Result<CaseloadResults, AppError> {
        let user = require_user().await?;
        let filter = person_filter(&query, &user)?;
        let page = PageRequest {
            page: query.page,
            page_size: PAGE_SIZE,
        };
        let page = caseload::search::search_people(&db()?, &filter, page).await?;
        Ok(CaseloadResults { page, filter })
    }

    pub async fn coaches() -> Result<Vec<CoachOption>, AppError> {
        require_user().await?;
        Ok(caseload::users::accounts::list_accounts(&db()?)
            .await?
            .into_iter()
            .filter(|account| account.disabled_at.is_none())
            .map(|account| CoachOption {
                username: account.username,
                display_name: account.display_name,
            })
            .collect())
    }

    pub async fn program_statuses() -> Result<Vec<ProgramStatusOption>, AppError> {
        require_user().await?;
        Ok(caseload::statuses::list_program_statuses(&db()?)
            .await?
            .into_iter()
            .map(|s| ProgramStatusOption {
                code: s.code,
                name: s.name,
            })
            .collect())
    }
}
