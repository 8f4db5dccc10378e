//! The query planner of the caseload search: which indexes a filter's query offers, and in
//! what order its rows are found and sorted. The conditions and key queries that follow from
//! a plan are built in `store::search`.

use bulkq_types::filter::PersonFilter;
use sea_orm::DbBackend;

/// Up to this many matches, a text-filtered page is sorted after filtering (see
/// [`search_people`](super::search_people)); beyond it the name index is walked.
pub(crate) const SORT_AFTER_FILTER_MAX: u64 = 50_000;

/// Up to this many matches, any page is sorted after filtering.
const SORT_ALWAYS_MAX: u64 = 2_000;

/// How a query finds its rows; it matters on SQLite, whose planner (with the STAT4
/// statistics its bundled build keeps) prefers a filter's index plus a sort even where
/// walking the sort index finds a page at once, even for a status that one person in ten
/// has (ADR 0020). PostgreSQL's planner chooses well between the two and gets the same SQL
/// for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Find the matches through the filters' own indexes (counts, small results).
    UseFilterIndexes,
    /// Walk the index of the ORDER BY (names, or the primary key) and test each row: on
    /// SQLite no filter term may offer an index.
    WalkSortIndex,
    /// PostgreSQL: walk the filter's own index, which lists its people in name order (status
    /// and coach only, migration `m20261121_000022`): a deep page skips index entries of
    /// matches only, where walking the name index would test every row before it.
    WalkFilterIndex,
    /// SQLite, a status and/or a coach alone: walk the name index from the counted name
    /// range where the page starts, which took the place of those name-ordered indexes
    /// there (ADR 0087).
    WalkNameRanges,
}

/// The shape of a filter as the planner sees it: which indexes can answer it.
pub(crate) trait FilterShape {
    /// The "contains" text when it is the only criterion: SQLite then finds the matches'
    /// sort keys in its "contains" index alone.
    fn only_contains(&self) -> Option<&str>;
    /// The longest name word (the likeliest to narrow the search most) and the filter
    /// without it, if a name is given: a name search starts from that word's indexes.
    fn split_name_word(&self) -> Option<(String, PersonFilter)>;
    /// Whether the filter is a program status and/or a coach and nothing else: those have
    /// indexes in name order (PostgreSQL) or counted name ranges (SQLite).
    fn only_status_or_coach(&self) -> bool;
    /// Whether a text criterion (name, email, contains), the watch list or open alerts
    /// narrow the search: filters whose matches need not be spread evenly through the
    /// alphabet.
    fn has_text(&self) -> bool;
}

impl FilterShape for PersonFilter {
    fn only_contains(&self) -> Option<&str> {
        let alone = PersonFilter {
            contains: self.contains.clone(),
            ..PersonFilter::default()
        };
        (*self == alone).then(|| self.contains_text()).flatten()
    }

    fn split_name_word(&self) -> Option<(String, PersonFilter)> {
        let mut words = self.name_words();
        let longest = (0..words.len()).max_by_key(|&i| (words[i].len(), std::cmp::Reverse(i)))?;
        let word = words.remove(longest).to_lowercase();
        let rest = PersonFilter {
            name: (!words.is_empty()).then(|| words.join(" ")),
            ..self.clone()
        };
        Some((word, rest))
    }

    fn only_status_or_coach(&self) -> bool {
        !self.has_text() && (self.program_status.is_some() || self.coach_id.is_some())
    }

    fn has_text(&self) -> bool {
        self.name.is_some()
            || self.email.is_some()
            || self.contains.is_some()
            || self.watched_by.is_some()
            || self.has_open_alerts
    }
}

/// Which plan finds a page fast, given how many match.
///
/// Walking the name index and filtering finds a page at once when matches are spread
/// through the alphabet, but a text filter's matches can sit in one stretch of it
/// ("O'Brien"), which no planner can know; and a handful of matches are found fastest
/// through their own index whatever they are. Then the matches' sort keys are collected and
/// sorted.
pub(crate) fn choose_plan(filter: &PersonFilter, counted: u64, backend: DbBackend) -> Plan {
    let sort_after_filter =
        counted <= SORT_ALWAYS_MAX || (filter.has_text() && counted <= SORT_AFTER_FILTER_MAX);
    if sort_after_filter {
        Plan::UseFilterIndexes
    } else if filter.only_status_or_coach() {
        match backend {
            DbBackend::Sqlite => Plan::WalkNameRanges,
            _ => Plan::WalkFilterIndex,
        }
    } else {
        Plan::WalkSortIndex
    }
}

#[cfg(test)]
mod tests {
    use super::{FilterShape, PersonFilter};

    #[test]
    fn name_searches_start_from_their_longest_word() {
        let filter = PersonFilter {
            name: Some("Ada  NGUY lo".into()),
            program_status: Some("ACTIVE".into()),
            ..PersonFilter::default()
        };
        let (word, rest) = filter.split_name_word().unwrap();
        assert_eq!(word, "nguy");
        assert_eq!(rest.name.as_deref(), Some("Ada lo"));
        assert_eq!(rest.program_status.as_deref(), Some("ACTIVE"));
        let one = PersonFilter {
            name: Some("ada".into()),
            ..PersonFilter::default()
        };
        assert_eq!(one.split_name_word().unwrap().1, PersonFilter::default());
    }
}
