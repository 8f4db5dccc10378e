//! People as a caseload search lists them, one page at a time.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

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
    /// How many early alerts of theirs are open.
    #[serde(default)]
    pub open_alerts: u32,
}

/// One page of people plus the number matching the filter in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonPage {
    pub people: Vec<PersonSummary>,
    /// How many match, counted up to a cap (`caseload::search::COUNT_CAP`).
    pub total: u64,
    /// False when more match than were counted (and `total` is the cap): "100,000+".
    pub total_is_exact: bool,
    pub page: u64,
    pub page_size: u64,
}

impl PersonPage {
    /// How many pages the whole result has (at least one, even when empty).
    pub fn page_count(&self) -> u64 {
        self.total.div_ceil(self.page_size.max(1)).max(1)
    }
}
