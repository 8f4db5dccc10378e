//! What a list of tasks asks for: the explorer's filters, page and size exactly as the
//! page's URL, the dashboard's server call and `GET /api/1/tasks` carry them ([`TaskQuery`]),
//! checked once into what the store needs ([`TaskSearch`]), every bad field reported.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::person_records::school_id_problem;
use crate::state::TaskStatus;
use crate::task::TaskView;
use crate::text::{Lines, control_character_problem};

/// Tasks per page when the request does not say.
pub const DEFAULT_PAGE_SIZE: u64 = 50;

/// The most tasks one page holds.
pub const MAX_PAGE_SIZE: u64 = 200;

/// Matching tasks are counted up to this many; beyond it a page says "more than" (counting
/// a million rows for every page would cost more than the page).
pub const COUNT_CAP: u64 = 10_000;

/// The longest owner name a filter accepts (as long as a username may be).
pub const MAX_OWNER_LEN: usize = 160;

/// The longest action name a filter accepts (as long as a component name may be).
pub const MAX_ACTION_LEN: usize = 128;

/// The longest text searched for in tasks.
pub const MAX_TEXT_LEN: usize = 200;

/// A task list's request, every field as text so that each bad one gets its own message.
/// Absent fields do not filter. The URL of the explorer is this, form-encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams, utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TaskQuery {
    /// Present (with any value): only the caller's own tasks. Staff only ever see their own;
    /// for admins this switches between their own and everyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mine: Option<String>,
    /// A status, or several separated by commas (`FAILURE,ERROR,ABANDONED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// An action's (a queue component's) name, e.g. `caseload.export`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The username of the task's owner (admins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Created on or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_from: Option<String>,
    /// Created on or before this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_to: Option<String>,
    /// One task's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Text the task's request contains, in any case: an email's subject or message, a
    /// status, a coach, a note; for admins, also its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The school id of a person the task touched (recorded an outcome for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The page after this one: the `next` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Tasks per page, 1 to 200 (50 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

/// Where a page of tasks, newest first, ends: the last task's creation time and id. The next
/// page holds the tasks strictly after it in that order, however many were added meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskCursor {
    pub created: DateTime<Utc>,
    pub id: Uuid,
}

/// A checked [`TaskQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskSearch {
    pub mine: bool,
    /// Any of these (every status when empty).
    pub statuses: Vec<TaskStatus>,
    pub action: Option<String>,
    pub owner: Option<String>,
    /// Created at or after this.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before this.
    pub created_until: Option<DateTime<Utc>>,
    pub id: Option<Uuid>,
    /// Lowercased.
    pub text: Option<String>,
    /// A person's school id, as given (trimmed).
    pub person: Option<String>,
    pub before: Option<TaskCursor>,
    pub limit: u64,
}

/// A page of tasks, newest first, and how many match in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskPage {
    pub tasks: Vec<TaskView>,
    /// How many tasks match the filters, counted up to 10,000 (see `more`).
    pub total: u64,
    /// More than `total` match.
    pub more: bool,
    /// The `before` of the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl TaskPage {
    /// "12 tasks", or "more than 10,000 tasks".
    pub fn total_words(&self) -> String {
        let tasks = crate::words::plural(self.total, "task", "tasks");
        if self.more {
            format!("more than {tasks}")
        } else {
            tasks
        }
    }
}

impl TaskQuery {
    /// The query as a URL's query string (without `?`), fields in a fixed order.
    pub fn to_query_string(&self) -> String {
        serde_urlencoded::to_string(self).unwrap_or_default()
    }

    /// Every field's name in a URL, in the struct's order.
    pub const FIELDS: [&str; 11] = [
        "mine",
        "status",
        "action",
        "owner",
        "created_from",
        "created_to",
        "id",
        "text",
        "person",
        "before",
        "limit",
    ];

    /// Reads a page's URL query string (with or without `?`). Parameters that are not the
    /// query's (a tracking tag, a form's nameless field) are left out: an address should
    /// open the page, where the JSON API refuses them.
    pub fn from_query_string(query: &str) -> Result<Self, String> {
        from_page_url(query, &Self::FIELDS)
    }

    /// The same filters from their first page.
    pub fn first_page(&self) -> Self {
        TaskQuery {
            before: None,
            ..self.clone()
        }
    }

    /// Whether any field narrows the list (the page's own scope, `mine`, does not count).
    pub fn filters(&self) -> bool {
        [
            &self.status,
            &self.action,
            &self.owner,
            &self.created_from,
            &self.created_to,
            &self.id,
            &self.text,
            &self.person,
        ]
        .iter()
        .any(|field| {
            field
                .as_deref()
                .is_some_and(|value| !value.trim().is_empty())
        })
    }

    /// Checks every field; the problems are `(field, message)`, one per bad field.
    pub fn check(&self) -> Result<TaskSearch, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let mut problem = |field: &str, message: String| problems.push((field.to_owned(), message));
        let given = |field: &Option<String>| {
            field
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let mut search = TaskSearch {
            mine: self.mine.is_some(),
            limit: DEFAULT_PAGE_SIZE,
            ..TaskSearch::default()
        };
        if let Some(status) = given(&self.status) {
            match parse_statuses(&status) {
                Ok(statuses) => search.statuses = statuses,
                Err(message) => problem("status", message),
            }
        }
        if let Some(action) = given(&self.action) {
            match name_problem(&action, MAX_ACTION_LEN) {
                Some(message) => problem("action", message),
                None => search.action = Some(action),
            }
        }
        if let Some(owner) = given(&self.owner) {
            match name_problem(&owner, MAX_OWNER_LEN) {
                Some(message) => problem("owner", message),
                None => search.owner = Some(owner),
            }
        }
        let span = day_span(
            given(&self.created_from),
            given(&self.created_to),
            ["created_from", "created_to"],
            &mut problem,
        );
        search.created_from = span.from;
        search.created_until = span.until;
        if let Some(id) = given(&self.id) {
            match Uuid::parse_str(&id) {
                Ok(id) => search.id = Some(id),
                Err(_) => problem("id", "is not a task id (a UUID)".to_owned()),
            }
        }
        if let Some(text) = given(&self.text) {
            match name_problem(&text, MAX_TEXT_LEN) {
                Some(message) => problem("text", message),
                None => search.text = Some(text.to_lowercase()),
            }
        }
        if let Some(person) = given(&self.person) {
            match school_id_problem(&person) {
                Some(message) => problem("person", message),
                None => search.person = Some(person),
            }
        }
        if let Some(before) = given(&self.before) {
            match before.parse() {
                Ok(cursor) => search.before = Some(cursor),
                Err(()) => problem("before", "is not a page mark from a list".to_owned()),
            }
        }
        if let Some(limit) = given(&self.limit) {
            match limit.parse::<u64>() {
                Ok(limit @ 1..=MAX_PAGE_SIZE) => search.limit = limit,
                _ => problem("limit", format!("must be between 1 and {MAX_PAGE_SIZE}")),
            }
        }
        if problems.is_empty() {
            Ok(search)
        } else {
            Err(problems)
        }
    }
}

/// A page's filters from its URL query string (with or without `?`), reading only the
/// parameters named in `fields`: others (a tracking tag, a form's nameless field) are left
/// out, since an address should open the page, where the JSON API refuses them.
pub(crate) fn from_page_url<Q: serde::de::DeserializeOwned>(
    query: &str,
    fields: &[&str],
) -> Result<Q, String> {
    let known = query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| fields.contains(&pair.split('=').next().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("&");
    serde_urlencoded::from_str(&known).map_err(|e| e.to_string())
}

/// What is wrong with a name a filter compares with, if anything.
pub(crate) fn name_problem(name: &str, max_len: usize) -> Option<String> {
    if name.chars().count() > max_len {
        return Some(format!("must be at most {max_len} characters"));
    }
    control_character_problem(name, Lines::One)
}

/// `QUEUED` or `FAILURE,ERROR`: known statuses, each once.
fn parse_statuses(text: &str) -> Result<Vec<TaskStatus>, String> {
    let mut statuses = Vec::new();
    for name in text.split(',').map(str::trim) {
        let status = TaskStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
                format!("must be one or more of {}", names.join(", "))
            })?;
        if !statuses.contains(&status) {
            statuses.push(status);
        }
    }
    Ok(statuses)
}

/// The times from the start of one day to the end of another, both `YYYY-MM-DD` (UTC) and
/// either open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DaySpan {
    /// At or after this.
    pub from: Option<DateTime<Utc>>,
    /// Before this.
    pub until: Option<DateTime<Utc>>,
}

/// The span of days `from` to `to` (both included), reporting a bad day or a reversed span
/// under `fields` (the names of the two ends in the request).
pub(crate) fn day_span(
    from: Option<String>,
    to: Option<String>,
    fields: [&str; 2],
    problem: &mut impl FnMut(&str, String),
) -> DaySpan {
    let mut span = DaySpan::default();
    match from.map(|day| parse_day(&day)) {
        Some(Ok(day)) => span.from = Some(start_of(day)),
        Some(Err(message)) => problem(fields[0], message),
        None => {}
    }
    match to.map(|day| parse_day(&day)) {
        // The day after 9999-12-31 is past what SQLite orders, and past every row.
        Some(Ok(day)) => {
            span.until = day
                .succ_opt()
                .filter(|next| next.year() <= 9999)
                .map(start_of)
        }
        Some(Err(message)) => problem(fields[1], message),
        None => {}
    }
    if let (Some(from), Some(until)) = (span.from, span.until)
        && until <= from
    {
        problem(fields[1], format!("must not be before {}", fields[0]));
    }
    span
}

/// A day from year 1 to 9999: as far as both databases compare stored times in order (SQLite
/// compares them as text, in which a five-digit year sorts before a four-digit one).
fn parse_day(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|day| (1..=9999).contains(&day.year()))
        .ok_or_else(|| "must be a day written YYYY-MM-DD, in the years 1 to 9999".to_owned())
}

fn start_of(day: NaiveDate) -> DateTime<Utc> {
    day.and_time(NaiveTime::MIN).and_utc()
}

impl fmt::Display for TaskCursor {
    /// `<nanoseconds since 1970>_<id>`: short, and nothing in it needs escaping in a URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.created.timestamp_nanos_opt().unwrap_or_default();
        write!(f, "{nanos}_{}", self.id.simple())
    }
}

impl FromStr for TaskCursor {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let (nanos, id) = text.split_once('_').ok_or(())?;
        let nanos: i64 = nanos.parse().map_err(|_| ())?;
        Ok(TaskCursor {
            created: DateTime::from_timestamp_nanos(nanos),
            id: Uuid::parse_str(id).map_err(|_| ())?,
        })
    }
}

impl From<&TaskView> for TaskCursor {
    fn from(task: &TaskView) -> Self {
        TaskCursor {
            created: task.created_date,
            id: task.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &str) -> TaskQuery {
        TaskQuery::from_query_string(pairs).expect("a readable query")
    }

    #[test]
    fn an_empty_query_lists_everything_fifty_at_a_time() {
        let search = query("").check().expect("valid");
        assert_eq!(
            search,
            TaskSearch {
                limit: DEFAULT_PAGE_SIZE,
                ..TaskSearch::default()
            }
        );
        assert!(query("mine").check().expect("valid").mine);
    }

    #[test]
    fn every_bad_field_is_reported() {
        let problems = query(
            "status=QUEUED,DONE&action=%07&created_from=yesterday&created_to=2026-13-01\
             &id=42&before=nope&limit=0",
        )
        .check()
        .expect_err("invalid");
        let fields: Vec<&str> = problems.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "status",
                "action",
                "created_from",
                "created_to",
                "id",
                "before",
                "limit"
            ]
        );
    }

    #[test]
    fn days_cover_whole_utc_days_and_must_be_in_order() {
        let search = query("created_from=2026-11-20&created_to=2026-11-20")
            .check()
            .expect("valid");
        assert_eq!(
            search.created_from.map(|t| t.to_rfc3339()),
            Some("2026-11-20T00:00:00+00:00".to_owned())
        );
        assert_eq!(
            search.created_until.map(|t| t.to_rfc3339()),
            Some("2026-11-21T00:00:00+00:00".to_owned())
        );
        let problems = query("created_from=2026-11-21&created_to=2026-11-20")
            .check()
            .expect_err("reversed");
        assert_eq!(problems[0].0, "created_to");
    }

    #[test]
    fn statuses_may_be_several_and_are_kept_once() {
        let search = query("status=FAILURE,%20ERROR,FAILURE")
            .check()
            .expect("valid");
        assert_eq!(search.statuses, [TaskStatus::Failure, TaskStatus::Error]);
    }

    #[test]
    fn a_cursor_reads_back_what_it_wrote() {
        let cursor = TaskCursor {
            created: DateTime::from_timestamp_nanos(1_795_000_000_123_456_789),
            id: Uuid::now_v7(),
        };
        assert_eq!(cursor.to_string().parse::<TaskCursor>(), Ok(cursor));
        assert!("12_x".parse::<TaskCursor>().is_err());
    }

    #[test]
    fn the_url_form_round_trips_and_unknown_fields_are_refused() {
        let original = TaskQuery {
            status: Some("FAILURE,ERROR".into()),
            owner: Some("lee & co".into()),
            ..TaskQuery::default()
        };
        let text = original.to_query_string();
        assert_eq!(text, "status=FAILURE%2CERROR&owner=lee+%26+co");
        assert_eq!(query(&text), original);
        assert_eq!(
            query("?colour=red&=&status=QUEUED&"),
            TaskQuery {
                status: Some("QUEUED".into()),
                ..TaskQuery::default()
            }
        );
    }

    #[test]
    fn the_field_list_names_every_field() {
        let every = TaskQuery {
            mine: Some(String::new()),
            status: Some(String::new()),
            action: Some(String::new()),
            owner: Some(String::new()),
            created_from: Some(String::new()),
            created_to: Some(String::new()),
            id: Some(String::new()),
            text: Some(String::new()),
            person: Some(String::new()),
            before: Some(String::new()),
            limit: Some(String::new()),
        };
        let names: Vec<String> = every
            .to_query_string()
            .split('&')
            .map(|pair| pair.trim_end_matches('=').to_owned())
            .collect();
        assert_eq!(names, TaskQuery::FIELDS);
        assert!(serde_urlencoded::from_str::<TaskQuery>("colour=red").is_err());
    }
}
