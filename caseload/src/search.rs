//! Caseload search: filters, a stable sort and server-side paging, plus the keyset walk that
//! bulk actions use to visit every person a saved query matches.

use queue::id_list::id_in;
use sea_orm::sea_query::{
    Expr, ExprTrait, Func, LikeExpr, Order, Query, SelectStatement, UnionType,
};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, IdenStatic, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::Actor;
use crate::entity::{person, person_watch};
use crate::status_change::MAX_STATUS_CODE_LEN;
use crate::text::{Lines, control_character_problem};

/// The shortest text a "contains" search accepts: PostgreSQL's trigram index needs three
/// characters to narrow anything down, and shorter text matches much of the caseload anyway.
pub const MIN_CONTAINS_LEN: usize = 3;

/// The text a "contains" search looks in, over `person`'s columns: what the migrations store
/// in `person_contains` (the FTS5 table on SQLite, where the LIKE rechecks this expression).
const CONTAINS_EXPRESSION: &str =
    "lower(first_name || ' ' || last_name || ' ' || school_id || ' ' || coalesce(email, ''))";

/// The table answering "contains" searches on both backends: an FTS5 phrase index on SQLite
/// (rowids only), a table of each person's text and sort key under a trigram index on
/// PostgreSQL.
const CONTAINS_TABLE: &str = "person_contains";

/// SQLite only: each person's sort key by `person` rowid, the rowids FTS5 answers with
/// (migration `m20261122_000041`).
const SORT_KEY_TABLE: &str = "person_sort_key";

/// The longest name search accepted, in characters.
pub const MAX_NAME_LEN: usize = 200;

/// The most different words a name search may have; nobody's name has more.
pub const MAX_NAME_WORDS: usize = 8;

/// The longest email prefix accepted: the longest address SMTP allows (RFC 5321).
pub const MAX_EMAIL_LEN: usize = 254;

/// The longest "contains" text accepted.
pub const MAX_CONTAINS_LEN: usize = 100;

/// The furthest a page may start (`page × page_size`): a million people in, the most any
/// caseload has. Nobody pages that far (they narrow the search), and the bound keeps the
/// offset within what both databases accept.
pub const MAX_PAGE_START: u64 = 1_000_000;

/// Where a page's count stops: beyond it the page reports "more than this many".
pub const COUNT_CAP: u64 = 100_000;

/// Up to this many matches, a text-filtered page is sorted after filtering (see
/// [`search_people`]); beyond it the name index is walked.
const SORT_AFTER_FILTER_MAX: u64 = 50_000;

/// Up to this many matches, any page is sorted after filtering.
const SORT_ALWAYS_MAX: u64 = 2_000;

/// How a query finds its rows; it matters on SQLite, whose planner (with the STAT4
/// statistics its bundled build keeps) prefers a filter's index plus a sort even where
/// walking the sort index finds a page at once (75–115 ms instead of about 1 ms for a
/// status that one person in ten has, at a million people). PostgreSQL's planner chooses
/// well between the two and gets the same SQL for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Find the matches through the filters' own indexes (counts, small results).
    UseFilterIndexes,
    /// Walk the index of the ORDER BY (names, or the primary key) and test each row: on
    /// SQLite no filter term may offer an index.
    WalkSortIndex,
    /// Walk the filter's own index, which lists its people in name order (status and coach
    /// only, migration `m20261121_000022`): a deep page skips index entries of matches
    /// only, where walking the name index would test every row before it.
    WalkFilterIndex,
}

/// The columns a name word may start; each has a covering index (`idx_person_search_*`) that
/// holds the sort key and every column a name search tests.
const NAME_COLUMNS: [person::Column; 3] = [
    person::Column::FirstName,
    person::Column::LastName,
    person::Column::SchoolId,
];

/// The order of every search: last name, first name, then id (namesakes page stably).
const SORT_KEY: [person::Column; 3] = [
    person::Column::LastName,
    person::Column::FirstName,
    person::Column::Id,
];

/// The alias of the subquery of matching sort keys that pages and counts read.
const MATCHES: &str = "matches";

/// The most rows one page may hold; larger requests are rejected, not silently truncated.
pub const MAX_PAGE_SIZE: u64 = 200;

/// Which people a search (or a bulk action's saved query) selects. Empty means everyone;
/// every field given narrows the result. Missing fields in JSON mean "any", so a saved
/// `{"query": {...}}` names only the filters it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PersonFilter {
    /// Words that must each start a first name, last name or school id (case-insensitive).
    pub name: Option<String>,
    /// The start of the email address (case-insensitive).
    pub email: Option<String>,
    /// Text found anywhere in the first name, last name, school id or email address
    /// (case-insensitive; at least [`MIN_CONTAINS_LEN`] characters).
    pub contains: Option<String>,
    /// Only people in this program status (by code).
    pub program_status: Option<String>,
    /// Only people coached by this staff user ("my caseload").
    pub coach_id: Option<Uuid>,
    /// Only people this staff user watches ("watched by me").
    pub watched_by: Option<Uuid>,
}

impl PersonFilter {
    /// Rejects a filter no search should run; the message names the first bad field.
    pub fn validate(&self) -> Result<(), CaseloadError> {
        match self.problems().into_iter().next() {
            Some((field, message)) => Err(CaseloadError::Invalid(format!("{field}: {message}"))),
            None => Ok(()),
        }
    }

    /// Everything wrong with the filter, by field: text too long or holding control
    /// characters, a name of too many words, a "contains" text too short.
    ///
    /// The caps keep every query small whatever is sent: each name word adds a condition on
    /// three columns, and a statement of thousands of them overflowed the stack that
    /// renders it (and would exceed the databases' expression limits).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let texts = [
            ("name", &self.name, MAX_NAME_LEN),
            ("email", &self.email, MAX_EMAIL_LEN),
            ("contains", &self.contains, MAX_CONTAINS_LEN),
            ("program_status", &self.program_status, MAX_STATUS_CODE_LEN),
        ];
        let mut problems = Vec::new();
        for (field, text, max) in texts {
            let Some(text) = text.as_deref() else {
                continue;
            };
            if text.chars().count() > max {
                problems.push((field, format!("at most {max} characters")));
            } else if let Some(problem) = control_character_problem(text, Lines::One) {
                problems.push((field, problem));
            }
        }
        if problems.is_empty() && self.name_words().len() > MAX_NAME_WORDS {
            problems.push(("name", format!("at most {MAX_NAME_WORDS} different words")));
        }
        if let Some(text) = self.contains_text()
            && text.chars().count() < MIN_CONTAINS_LEN
        {
            problems.push((
                "contains",
                format!("a \"contains\" search needs at least {MIN_CONTAINS_LEN} characters"),
            ));
        }
        problems
    }

    /// The name's words in the order given, each once however it is capitalised (a repeated
    /// word narrows nothing).
    fn name_words(&self) -> Vec<&str> {
        let mut words: Vec<&str> = Vec::new();
        for word in self.name.iter().flat_map(|name| name.split_whitespace()) {
            if !words
                .iter()
                .any(|seen| seen.to_lowercase() == word.to_lowercase())
            {
                words.push(word);
            }
        }
        words
    }

    /// The "contains" text, trimmed, if any is given.
    fn contains_text(&self) -> Option<&str> {
        self.contains
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }

    /// The "contains" text when it is the only criterion: SQLite then finds the matches'
    /// sort keys in its "contains" index alone.
    fn only_contains(&self) -> Option<&str> {
        let alone = PersonFilter {
            contains: self.contains.clone(),
            ..PersonFilter::default()
        };
        (*self == alone).then(|| self.contains_text()).flatten()
    }

    /// The longest name word (the likeliest to narrow the search most) and the filter
    /// without it, if a name is given: a name search starts from that word's indexes.
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

    /// Whether the filter is a program status and/or a coach and nothing else: those have
    /// indexes in name order.
    fn only_status_or_coach(&self) -> bool {
        !self.has_text() && (self.program_status.is_some() || self.coach_id.is_some())
    }

    /// Whether a text criterion (name, email, contains) or the watch list narrows the search:
    /// filters whose matches need not be spread evenly through the alphabet.
    fn has_text(&self) -> bool {
        self.name.is_some()
            || self.email.is_some()
            || self.contains.is_some()
            || self.watched_by.is_some()
    }
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
    /// How many match, up to [`COUNT_CAP`].
    pub total: u64,
    /// False when more than [`COUNT_CAP`] match (and `total` is the cap).
    pub total_is_exact: bool,
    pub page: u64,
    pub page_size: u64,
}

/// Finds the people matching `filter`, sorted by last name, first name, then id (so paging
/// is stable even among namesakes).
///
/// `total` is exact up to [`COUNT_CAP`]; beyond it the page says `total_is_exact: false` and
/// `total` is the cap ("100,000+"). Counting every match is what costs at a million people
/// (a full count takes 15 to 80 ms there), and nobody pages through more than 2,000 pages:
/// they narrow the search. Bulk actions count exactly with [`count_people`].
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
    filter.validate()?;
    let backend = db.get_database_backend();
    let one_pass = match (filter.only_contains(), backend) {
        (Some(text), DbBackend::Postgres) => {
            contains_page(db, backend, &text.to_lowercase(), page).await?
        }
        _ => None,
    };
    let (counted, ids) = match one_pass {
        Some(found) => found,
        None => {
            let counted = count_matches(db, backend, filter).await?;
            let plan = choose_plan(filter, counted);
            let keys = match_keys(backend, filter, plan)?;
            (counted, page_ids(db, keys, plan, page).await?)
        }
    };
    let people = people_in_order(db, &ids)
        .await?
        .into_iter()
        .map(PersonSummary::from)
        .collect();
    Ok(PersonPage {
        people,
        total: Ord::min(counted, COUNT_CAP),
        total_is_exact: counted <= COUNT_CAP,
        page: page.page,
        page_size: page.page_size,
    })
}

/// Which plan finds a page fast, given how many match.
///
/// Walking the name index and filtering finds a page at once when matches are spread
/// through the alphabet, but a text filter's matches can sit in one stretch of it
/// ("O'Brien"), which no planner can know; and a handful of matches are found fastest
/// through their own index whatever they are. Then the matches' sort keys are collected and
/// sorted.
fn choose_plan(filter: &PersonFilter, counted: u64) -> Plan {
    let sort_after_filter =
        counted <= SORT_ALWAYS_MAX || (filter.has_text() && counted <= SORT_AFTER_FILTER_MAX);
    if sort_after_filter {
        Plan::UseFilterIndexes
    } else if filter.only_status_or_coach() {
        Plan::WalkFilterIndex
    } else {
        Plan::WalkSortIndex
    }
}

/// PostgreSQL: a "contains"-only search in one pass over its matches, the page and how many
/// match from `COUNT(*) OVER ()` beside the sort. For the 38,000 O'Briens at a million
/// people, counting alone re-reads every match (19 ms) before the page does (26 ms); the one
/// pass takes 31 ms. Not on SQLite, whose FTS5 index counts without reading any row (3 ms)
/// while the window costs its sort 12 ms more.
///
/// `None` when the one pass does not answer: more than [`SORT_AFTER_FILTER_MAX`] match (the
/// pass stops there, and such a page is found by walking the name index), or the page lies
/// past the last match (no row carries the count).
async fn contains_page<C: ConnectionTrait>(
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
    let condition = condition(db.get_database_backend(), filter, Plan::UseFilterIndexes)?;
    count_matching(db, condition.add(scope)).await
}

/// The next `limit` people after `after` (by id) matching `filter` within `actor`'s scope.
///
/// This is how a bulk action walks a saved query when it runs: keyset pagination by primary
/// key, so each batch is one index range however far along the walk is, memory stays at one
/// batch, and the id of the last person is the checkpoint to resume from. People added
/// behind the cursor during the walk are not visited; that is the meaning of "evaluated when
/// the task runs".
pub async fn people_after<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    actor: &Actor,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<person::Model>, CaseloadError> {
    people_after_within(db, filter, actor.scope(), after, limit).await
}

/// [`people_after`] within any scope (see [`count_people_within`]).
pub async fn people_after_within<C: ConnectionTrait>(
    db: &C,
    filter: &PersonFilter,
    scope: Condition,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<person::Model>, CaseloadError> {
    // Walking the primary key suits filters spread evenly over ids (status, coach); text
    // filters are looked up through their indexes and each batch sorted.
    let plan = match filter.has_text() {
        true => Plan::UseFilterIndexes,
        false => Plan::WalkSortIndex,
    };
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

/// The people with these ids, by id (unknown ids are simply absent).
pub async fn people_by_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    crate::access::check_batch_size(ids)?;
    Ok(person::Entity::find()
        .filter(id_in(
            db.get_database_backend(),
            person::Column::Id,
            ids.iter().copied(),
        ))
        .order_by_asc(person::Column::Id)
        .all(db)
        .await?)
}

async fn count_matching<C: ConnectionTrait>(
    db: &C,
    condition: Condition,
) -> Result<u64, CaseloadError> {
    Ok(person::Entity::find().filter(condition).count(db).await?)
}

/// How many people match `filter`, stopping at [`COUNT_CAP`] + 1: the matches' sort keys
/// are counted, from indexes alone where [`match_keys`] can.
async fn count_matches<C: ConnectionTrait>(
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

/// The sort key (`last_name, first_name, id`) of every person matching `filter`.
///
/// Looking the matches up, no `person` row is read where an index holds the keys:
/// - a name search is the UNION of one SELECT per column its longest word may start, each
///   served by that column's covering index (which also holds what the other words test):
///   a page of 26,444 "Ada"s takes 20 ms instead of 190 ms from the table. The OR of the
///   three columns in one SELECT would visit the table for every match on both backends;
/// - a "contains" search alone reads narrow tables only ([`contains_keys`]).
fn match_keys(
    backend: DbBackend,
    filter: &PersonFilter,
    plan: Plan,
) -> Result<SelectStatement, CaseloadError> {
    filter.validate()?;
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
    let branch = |column| keys(rest.clone().add(starts_with(backend, false, column, &word)));
    let [first, others @ ..] = NAME_COLUMNS;
    let mut union = branch(first);
    for column in others {
        union.union(UnionType::Distinct, branch(column));
    }
    Ok(union)
}

/// The sort key of every person whose text contains `text` (already lowercase), read from
/// narrow tables and never from `person`: on PostgreSQL `person_contains` holds the key
/// next to the text (see `m20261121_000040`); on SQLite the FTS5 index finds the rowids
/// (3 ms for the 38,000 O'Briens at a million people) and `person_sort_key` has their keys
/// (see `m20261122_000041`).
///
/// On SQLite each match's key is looked up as the FTS5 index hands the match out (`CROSS
/// JOIN`, whose order SQLite keeps). `rid IN (SELECT rowid …)` first copied every match into
/// a temporary index: a page of the 38,201 O'Briens cost 225 million instructions instead
/// of 170 million (callgrind), and the mixed searches' p95 was 38.0–42.6 ms instead of
/// 35.6–37.0 (three alternating runs each, 2026-11-25).
fn contains_keys(backend: DbBackend, text: &str) -> SelectStatement {
    let mut keys = Query::select()
        .from(CONTAINS_TABLE)
        .cond_where(contains_table_matches(backend, text))
        .to_owned();
    match backend {
        DbBackend::Sqlite => keys
            .columns(SORT_KEY.map(|column| (SORT_KEY_TABLE, column)))
            .cross_join(SORT_KEY_TABLE)
            .and_where(Expr::col((SORT_KEY_TABLE, "rid")).equals((CONTAINS_TABLE, "rowid")))
            .to_owned(),
        _ => keys.columns(SORT_KEY).to_owned(),
    }
}

/// The ids of one page of `keys`, in page order.
///
/// Only the sort keys are sorted and skipped, and only the page's rows are then read
/// ([`people_in_order`]): an offset of 50,000 skips index entries, not table rows. Looking
/// the matches up, the sort is by an expression (`last_name || ''`), which keeps the
/// planner off the name index (see `search_people`).
async fn page_ids<C: ConnectionTrait>(
    db: &C,
    keys: SelectStatement,
    plan: Plan,
    page: PageRequest,
) -> Result<Vec<Uuid>, CaseloadError> {
    let rows = db.query_all(&page_query(keys, plan, page)).await?;
    Ok(rows
        .iter()
        .map(|row| row.try_get_by_index(0))
        .collect::<Result<_, _>>()?)
}

/// The query of [`page_ids`]: the ids of one page of `keys`, sorted.
fn page_query(keys: SelectStatement, plan: Plan, page: PageRequest) -> SelectStatement {
    let last_name = match plan {
        Plan::UseFilterIndexes => Expr::cust(format!("{MATCHES}.last_name || ''")),
        Plan::WalkSortIndex | Plan::WalkFilterIndex => {
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

/// The people with these ids, in the order of `ids` (one page: at most [`MAX_PAGE_SIZE`]).
async fn people_in_order<C: ConnectionTrait>(
    db: &C,
    ids: &[Uuid],
) -> Result<Vec<person::Model>, CaseloadError> {
    let mut people = person::Entity::find()
        .filter(id_in(
            db.get_database_backend(),
            person::Column::Id,
            ids.iter().copied(),
        ))
        .all(db)
        .await?;
    people.sort_by_key(|person| ids.iter().position(|id| *id == person.id));
    Ok(people)
}

/// The SQL condition for a filter.
fn condition(
    backend: DbBackend,
    filter: &PersonFilter,
    plan: Plan,
) -> Result<Condition, CaseloadError> {
    filter.validate()?;
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
    Ok(all)
}

/// The person's names, school id or email contain `text` (already lowercase).
///
/// The answer comes from `person_contains` ([`contains_table_matches`]). On PostgreSQL that
/// is exact and serves the condition alone. On SQLite the FTS5 table holds no copy of the
/// text to test, so the LIKE over `person` is the condition and the table, whose phrase
/// query matches the same rows, only narrows it down (a walk offers no index at all).
fn contains(backend: DbBackend, walk: bool, text: &str) -> Condition {
    match backend {
        DbBackend::Postgres => {
            Condition::all().add(person::Column::Id.in_subquery(matching(backend, text)))
        }
        _ => {
            let like =
                Condition::all().add(Expr::cust(CONTAINS_EXPRESSION).like(contains_pattern(text)));
            match walk {
                true => like,
                false => like.add(Expr::cust("person.rowid").in_subquery(matching(backend, text))),
            }
        }
    }
}

/// Who has `text` (already lowercase) in their "contains" text: the `person_contains` key of
/// each, which is `person.id` on PostgreSQL and `person.rowid` on SQLite.
fn matching(backend: DbBackend, text: &str) -> SelectStatement {
    let column = match backend {
        DbBackend::Sqlite => "rowid",
        _ => "id",
    };
    Query::select()
        .column(column)
        .from(CONTAINS_TABLE)
        .cond_where(contains_table_matches(backend, text))
        .to_owned()
}

/// The rows of `person_contains` whose text contains `text` (already lowercase): an FTS5
/// phrase query on SQLite, a LIKE that the trigram index serves on PostgreSQL.
fn contains_table_matches(backend: DbBackend, text: &str) -> Condition {
    match backend {
        DbBackend::Sqlite => Condition::all().add(Expr::cust_with_values(
            "person_contains MATCH ?",
            [phrase_query(text)],
        )),
        _ => Condition::all().add(Expr::col((CONTAINS_TABLE, "text")).like(contains_pattern(text))),
    }
}

/// `LIKE '%text%'`, with the user's wildcards escaped.
fn contains_pattern(text: &str) -> LikeExpr {
    LikeExpr::new(format!("%{}%", escape_like(text))).escape('\\')
}

/// An FTS5 query for `text` as one phrase (quoted, quotes doubled).
///
/// The table's trigram tokenizer keeps positions and case (`detail='full'`,
/// `case_sensitive 1`, over text already lowercased like the LIKE's), so the phrase matches
/// exactly the rows whose text contains `text`: the same rows as the LIKE.
fn phrase_query(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// `lower(column)` starts with `prefix` (already lowercase).
///
/// The LIKE alone is exact, but no index serves it on either backend: SQLite uses none for
/// a LIKE with an ESCAPE clause, and PostgreSQL's `text_pattern_ops` needs the pattern as a
/// constant, which a cached generic plan of our parameterised statement does not have (we
/// measured 400 ms for a prefix after a few runs). So the same prefix is also given as a
/// byte-order range, `[prefix, prefix + U+10FFFF)`, which the migration's `lower(column)`
/// indexes serve (on PostgreSQL in the "C" collation, whose order is byte order).
fn starts_with(backend: DbBackend, walk: bool, column: person::Column, prefix: &str) -> Condition {
    let lowered = || Expr::expr(Func::lower(Expr::col(column)));
    let like = lowered().like(LikeExpr::new(format!("{}%", escape_like(prefix))).escape('\\'));
    let condition = Condition::all().add(like);
    let end = format!("{prefix}{}", char::MAX);
    match backend {
        DbBackend::Sqlite if !walk => condition.add(lowered().gte(prefix)).add(lowered().lt(end)),
        DbBackend::Postgres => {
            let name = column.as_str();
            condition.add(Expr::cust_with_values(
                format!(
                    "lower(person.{name}) COLLATE \"C\" >= $1 AND lower(person.{name}) COLLATE \"C\" < $2"
                ),
                [prefix.to_owned(), end],
            ))
        }
        _ => condition,
    }
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
    use super::{MAX_NAME_LEN, MAX_NAME_WORDS, PersonFilter, escape_like, phrase_query};

    #[test]
    fn phrase_queries_quote_the_whole_text() {
        assert_eq!(phrase_query("o'brien x"), r#""o'brien x""#);
        assert_eq!(phrase_query("a\"b"), r#""a""b""#);
    }

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

    #[test]
    fn repeated_name_words_collapse_and_long_names_are_refused() {
        let repeated = PersonFilter {
            name: Some(["a"; 12_000].join(" ") + " A ADA"),
            ..PersonFilter::default()
        };
        assert_eq!(repeated.name_words(), ["a", "ADA"]);
        assert_eq!(
            repeated.problems(),
            [("name", format!("at most {MAX_NAME_LEN} characters"))]
        );
        let twice = PersonFilter {
            name: Some("ada Ada ADA lo".into()),
            ..PersonFilter::default()
        };
        assert_eq!(twice.name_words(), ["ada", "lo"]);
        let many = PersonFilter {
            name: Some("a b c d e f g h i".into()),
            ..PersonFilter::default()
        };
        assert_eq!(
            many.problems(),
            [("name", format!("at most {MAX_NAME_WORDS} different words"))]
        );
        let long = PersonFilter {
            contains: Some("x".repeat(100_000)),
            email: Some("a\0b".into()),
            ..PersonFilter::default()
        };
        let fields: Vec<&str> = long.problems().iter().map(|(field, _)| *field).collect();
        assert_eq!(fields, ["email", "contains"]);
    }

    #[test]
    fn wildcards_in_user_input_match_literally() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
        assert_eq!(escape_like("o'brien"), "o'brien");
    }
}
