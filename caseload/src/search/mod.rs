//! Caseload search: filters, a stable sort and server-side paging, plus the keyset walk that
//! bulk actions use to visit every person a saved query matches.
//!
//! Submodule: `planner` (how a query finds its rows); the queries themselves are built and
//! run in `store::search`.

pub(crate) mod planner;

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::{PageRequest, PersonPage, PersonSummary};
use sea_orm::{Condition, ConnectionTrait, DbBackend};
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::Actor;
use crate::store;
use crate::store::entity::person;
use planner::{FilterShape, Plan, choose_plan};

/// The furthest a page may start (`page × page_size`): a million people in, the most any
/// caseload has. Nobody pages that far (they narrow the search), and the bound keeps the
/// offset within what both databases accept.
pub const MAX_PAGE_START: u64 = 1_000_000;

/// Where a page's count stops: beyond it the page reports "more than this many".
pub const COUNT_CAP: u64 = 100_000;

/// The most rows one page may hold; larger requests are rejected, not silently truncated.
pub const MAX_PAGE_SIZE: u64 = 200;

/// Rejects a filter no search should run; the message names the first bad field.
pub fn validate_filter(filter: &PersonFilter) -> Result<(), CaseloadError> {
    match filter.problems().into_iter().next() {
        Some((field, message)) => Err(CaseloadError::Invalid(format!("{field}: {message}"))),
        None => Ok(()),
    }
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
            open_alerts: 0,
        }
    }
}

/// Finds the people matching `filter`, sorted by last name, first name, then id (so paging
/// is stable even among namesakes).
///
/// `total` is exact up to [`COUNT_CAP`]; beyond it the page says `total_is_exact: false` and
/// `total` is the cap ("100,000+"). Counting every match is what costs at a million people
/// (ADR 0020), and nobody pages through more than 2,000 pages: they narrow the search. Bulk
/// actions count exactly with [`count_people`].
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
    if page.page.saturating_mul(page.page_size) > MAX_PAGE_START {
        return Err(CaseloadError::Invalid(format!(
            "page: a page may start at most {MAX_PAGE_START} people in; narrow the search"
        )));
    }
    validate_filter(filter)?;
    let backend = db.get_database_backend();
    let one_pass = match (filter.only_contains(), backend) {
        (Some(text), DbBackend::Postgres) => {
            store::search::contains_page(db, backend, &text.to_lowercase(), page).await?
        }
        _ => None,
    };
    let (counted, ids) = match one_pass {
        Some(found) => found,
        None => {
            let counted = store::search::count_matches(db, backend, filter).await?;
            let plan = choose_plan(filter, counted, backend);
            let ids = store::search::page_ids(db, backend, filter, plan, page).await?;
            (counted, ids)
        }
    };
    let open_alerts = crate::early_alerts::open_counts(db, &ids).await?;
    let people = people_in_order(db, &ids)
        .await?
        .into_iter()
        .map(|row| PersonSummary {
            open_alerts: open_alerts.get(&row.id).copied().unwrap_or_default(),
            ..PersonSummary::from(row)
        })
        .collect();
    Ok(PersonPage {
        people,
        total: Ord::min(counted, COUNT_CAP),
        total_is_exact: counted <= COUNT_CAP,
        page: page.page,
        page_size: page.page_size,
    })
}

/// How many people match `filter` within `actor`'s scope: what a bulk action over a saved
/// query will target (for previews and the task's progress total).
pub async fn count_people<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    actor: &Actor,
) -> Result<u64, CaseloadError> {
    count_people_within(db, filter, actor.scope()).await
}

/// [`count_people`] within any scope (a condition on `person`), e.g. `Condition::all()` for
/// work the run_as rule does not limit (unwatching one's own bookmarks).
pub async fn count_people_within<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
) -> Result<u64, CaseloadError> {
    store::search::count_within(db, filter, scope).await
}

/// One step of the keyset walk of a saved query: the people it found, and where the next
/// step begins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkStep {
    /// The people found, in id order: at most the limit, and possibly none before the end
    /// (the ids passed over matched a name word but not the whole filter or scope).
    pub people: Vec<person::Model>,
    /// The last id the step passed over; the next step begins after it. `None` when nothing
    /// is left after the cursor: the walk is over.
    pub last_visited: Option<Uuid>,
}

/// The next people after `after` (by id), at most `limit`, matching `filter` within
/// `actor`'s scope.
///
/// This is how a bulk action walks a saved query when it runs: keyset pagination by primary
/// key, so memory stays at one step and the last id visited is the checkpoint to resume
/// from. People added behind the cursor during the walk are not visited; that is the
/// meaning of "evaluated when the task runs".
pub async fn people_after<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    actor: &Actor,
    after: Option<Uuid>,
    limit: u64,
) -> Result<WalkStep, CaseloadError> {
    people_after_within(db, filter, actor.scope(), after, limit).await
}

/// [`people_after`] within any scope (see [`count_people_within`]).
pub async fn people_after_within<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
    after: Option<Uuid>,
    limit: u64,
) -> Result<WalkStep, CaseloadError> {
    let mut ahead = CandidatesAhead::reading(limit);
    people_after_reading_ahead(db, filter, scope, after, limit, &mut ahead).await
}

/// [`people_after_within`] for a walk that takes many steps: a name word's or watch list's
/// candidates are read `ahead` of the step, many steps' worth at once.
///
/// Why: the candidates' read costs every index entry of the name word after the cursor,
/// however few it returns, so a walk in short batches (25 ms while people write) paid it
/// once per batch. Read ahead, it is paid once per read (ADR 0053).
///
/// Each candidate is still tested against the whole filter and `scope` when its step runs,
/// so a person who stopped matching since the read is passed over. A person who began to
/// match an existing entry (renamed, newly watched) between the read and the step may be
/// missed, as though the change came after the walk passed them; people added since have
/// later ids and are found by the read that ends the walk, which always runs afresh.
pub async fn people_after_reading_ahead<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
    after: Option<Uuid>,
    limit: u64,
    ahead: &mut CandidatesAhead,
) -> Result<WalkStep, CaseloadError> {
    if let Some(ids) = ahead.next(db, filter, after, limit).await? {
        let Some(last_visited) = ids.last().copied() else {
            return Ok(WalkStep::default());
        };
        let people = store::search::matching_among(db, filter, scope, ids).await?;
        return Ok(WalkStep {
            people,
            last_visited: Some(last_visited),
        });
    }
    // Walking the primary key suits filters spread evenly over ids (status, coach); the
    // other text filters are looked up through their indexes and each step sorted.
    let plan = match filter.has_text() {
        true => Plan::UseFilterIndexes,
        false => Plan::WalkSortIndex,
    };
    let people = store::search::matching_after(db, filter, plan, scope, after, limit).await?;
    Ok(WalkStep {
        last_visited: people.last().map(|person| person.id),
        people,
    })
}

/// The candidate ids a walk has read ahead of its cursor (see
/// [`people_after_reading_ahead`]): at most one read's worth, in id order.
#[derive(Debug, Clone)]
pub struct CandidatesAhead {
    /// How many candidates one read asks for (at least the step's limit).
    per_read: u64,
    /// The cursor the candidates were read after.
    read_after: Option<Uuid>,
    ids: Vec<Uuid>,
}

impl CandidatesAhead {
    /// Nothing read yet; each read asks for `per_read` candidates.
    pub fn reading(per_read: u64) -> Self {
        Self {
            per_read,
            read_after: None,
            ids: Vec::new(),
        }
    }

    /// The next candidates after `after`, at most `limit`: from what was read ahead when it
    /// covers `after` and holds any beyond it, else from a fresh read (so the walk's end is
    /// always read afresh). `None` for a filter without candidates.
    async fn next<C: ConnectionTrait>(
        &mut self,
        db: &C,
        filter: &PersonFilter,
        after: Option<Uuid>,
        limit: u64,
    ) -> Result<Option<Vec<Uuid>>, CaseloadError> {
        let covered =
            self.read_after <= after && self.ids.last().is_some_and(|&last| after < Some(last));
        if !covered {
            let per_read = self.per_read.max(limit);
            let Some(ids) = store::search::walk_candidates(db, filter, after, per_read).await?
            else {
                return Ok(None);
            };
            self.ids = ids;
            self.read_after = after;
        }
        let start = self.ids.partition_point(|&id| Some(id) <= after);
        let end = start
            .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
            .min(self.ids.len());
        Ok(Some(self.ids[start..end].to_vec()))
    }
}

/// The people with these ids, by id (unknown ids are simply absent).
pub async fn people_by_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    crate::access::check_batch_size(ids)?;
    store::people::with_ids_by_id(db, ids).await
}

/// The people with these ids, in the order of `ids` (one page: at most [`MAX_PAGE_SIZE`]).
async fn people_in_order<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    let mut people = store::people::with_ids(db, ids).await?;
    people.sort_by_key(|person| ids.iter().position(|id| *id == person.id));
    Ok(people)
}
