//! The audit trail's shared words: what was done ([`AuditAct`], grouped in [`AuditArea`]s),
//! one recorded act as the Audit page and its CSV show it ([`AuditEntry`]), and the page's
//! filters exactly as its URL carries them ([`AuditQuery`]), checked once ([`AuditSearch`]).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::task_query::{DaySpan, day_span, from_page_url, name_problem};

/// Entries per page when the request does not say.
pub const DEFAULT_PAGE_SIZE: u64 = 50;
/// The most entries one page holds.
pub const MAX_PAGE_SIZE: u64 = 200;
/// The longest text the target filter accepts (a few ids or a username).
pub const MAX_TARGET_FILTER_LEN: usize = 200;
/// Targets named one by one in an entry; an act on more names these and counts the rest.
pub const TARGETS_NAMED: usize = 100;
/// What the `client` of an act from `bulkq` on a shell says.
pub const COMMAND_LINE: &str = "command line";

/// What part of the product an act changed; the page filters by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditArea {
    Tasks,
    PeriodicJobs,
    Actions,
    Users,
    Tokens,
    People,
    AlertReasons,
}

impl AuditArea {
    /// Every area, in the order the filter offers them.
    pub const ALL: [AuditArea; 7] = [
        AuditArea::Tasks,
        AuditArea::PeriodicJobs,
        AuditArea::Actions,
        AuditArea::Users,
        AuditArea::Tokens,
        AuditArea::People,
        AuditArea::AlertReasons,
    ];

    /// The stored and URL form.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditArea::Tasks => "tasks",
            AuditArea::PeriodicJobs => "periodic_jobs",
            AuditArea::Actions => "actions",
            AuditArea::Users => "users",
            AuditArea::Tokens => "tokens",
            AuditArea::People => "people",
            AuditArea::AlertReasons => "alert_reasons",
        }
    }

    /// As the filter names it.
    pub fn label(self) -> &'static str {
        match self {
            AuditArea::Tasks => "Tasks",
            AuditArea::PeriodicJobs => "Periodic jobs",
            AuditArea::Actions => "Action pauses",
            AuditArea::Users => "Users",
            AuditArea::Tokens => "API tokens",
            AuditArea::People => "People",
            AuditArea::AlertReasons => "Alert reasons",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|area| area.as_str() == text)
    }
}

/// One kind of act the trail records; in JSON, its stored form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum AuditAct {
    TaskCancel,
    TaskRetry,
    TaskRequeue,
    TaskAbandon,
    TaskReschedule,
    PeriodicRunNow,
    PeriodicPause,
    PeriodicResume,
    ActionPause,
    ActionResume,
    UserCreate,
    UserDisable,
    UserEnable,
    UserSetRole,
    UserResetPassword,
    UserChangePassword,
    UserSetEmail,
    TokenCreate,
    TokenRevoke,
    PeopleUpsert,
    PeopleRetire,
    PeopleImport,
    AlertReasonAdd,
    AlertReasonRetire,
}

impl AuditAct {
    /// Every act.
    pub const ALL: [AuditAct; 24] = [
        AuditAct::TaskCancel,
        AuditAct::TaskRetry,
        AuditAct::TaskRequeue,
        AuditAct::TaskAbandon,
        AuditAct::TaskReschedule,
        AuditAct::PeriodicRunNow,
        AuditAct::PeriodicPause,
        AuditAct::PeriodicResume,
        AuditAct::ActionPause,
        AuditAct::ActionResume,
        AuditAct::UserCreate,
        AuditAct::UserDisable,
        AuditAct::UserEnable,
        AuditAct::UserSetRole,
        AuditAct::UserResetPassword,
        AuditAct::UserChangePassword,
        AuditAct::UserSetEmail,
        AuditAct::TokenCreate,
        AuditAct::TokenRevoke,
        AuditAct::PeopleUpsert,
        AuditAct::PeopleRetire,
        AuditAct::PeopleImport,
        AuditAct::AlertReasonAdd,
        AuditAct::AlertReasonRetire,
    ];

    /// The stored form: `<area>.<verb>`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAct::TaskCancel => "tasks.cancel",
            AuditAct::TaskRetry => "tasks.retry",
            AuditAct::TaskRequeue => "tasks.requeue",
            AuditAct::TaskAbandon => "tasks.abandon",
            AuditAct::TaskReschedule => "tasks.reschedule",
            AuditAct::PeriodicRunNow => "periodic_jobs.run_now",
            AuditAct::PeriodicPause => "periodic_jobs.pause",
            AuditAct::PeriodicResume => "periodic_jobs.resume",
            AuditAct::ActionPause => "actions.pause",
            AuditAct::ActionResume => "actions.resume",
            AuditAct::UserCreate => "users.create",
            AuditAct::UserDisable => "users.disable",
            AuditAct::UserEnable => "users.enable",
            AuditAct::UserSetRole => "users.set_role",
            AuditAct::UserResetPassword => "users.reset_password",
            AuditAct::UserChangePassword => "users.change_password",
            AuditAct::UserSetEmail => "users.set_email",
            AuditAct::TokenCreate => "tokens.create",
            AuditAct::TokenRevoke => "tokens.revoke",
            AuditAct::PeopleUpsert => "people.upsert",
            AuditAct::PeopleRetire => "people.retire",
            AuditAct::PeopleImport => "people.import",
            AuditAct::AlertReasonAdd => "alert_reasons.add",
            AuditAct::AlertReasonRetire => "alert_reasons.retire",
        }
    }

    /// The area the act belongs to (the part of its stored form before the dot).
    pub fn area(self) -> AuditArea {
        let area = self.as_str().split('.').next().unwrap_or_default();
        AuditArea::parse(area).unwrap_or(AuditArea::Tasks)
    }

    /// What the act did, as the page says it.
    pub fn label(self) -> &'static str {
        match self {
            AuditAct::TaskCancel => "cancelled tasks",
            AuditAct::TaskRetry => "retried tasks",
            AuditAct::TaskRequeue => "requeued running tasks",
            AuditAct::TaskAbandon => "abandoned tasks",
            AuditAct::TaskReschedule => "rescheduled a task",
            AuditAct::PeriodicRunNow => "ran a periodic job now",
            AuditAct::PeriodicPause => "paused a periodic job",
            AuditAct::PeriodicResume => "resumed a periodic job",
            AuditAct::ActionPause => "paused an action",
            AuditAct::ActionResume => "resumed an action",
            AuditAct::UserCreate => "created an account",
            AuditAct::UserDisable => "disabled an account",
            AuditAct::UserEnable => "enabled an account",
            AuditAct::UserSetRole => "changed a role",
            AuditAct::UserResetPassword => "reset a password",
            AuditAct::UserChangePassword => "changed their password",
            AuditAct::UserSetEmail => "changed an email address",
            AuditAct::TokenCreate => "created an API token",
            AuditAct::TokenRevoke => "revoked an API token",
            AuditAct::PeopleUpsert => "brought people in step",
            AuditAct::PeopleRetire => "retired people",
            AuditAct::PeopleImport => "started a people import",
            AuditAct::AlertReasonAdd => "added an alert reason",
            AuditAct::AlertReasonRetire => "retired an alert reason",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|act| act.as_str() == text)
    }
}

impl From<AuditAct> for &'static str {
    fn from(act: AuditAct) -> Self {
        act.as_str()
    }
}

impl TryFrom<String> for AuditAct {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        AuditAct::parse(&text).ok_or_else(|| format!("no act is called {text:?}"))
    }
}

impl From<crate::task::TaskAct> for AuditAct {
    fn from(act: crate::task::TaskAct) -> Self {
        use crate::task::TaskAct;
        match act {
            TaskAct::Cancel => AuditAct::TaskCancel,
            TaskAct::Retry => AuditAct::TaskRetry,
            TaskAct::Requeue => AuditAct::TaskRequeue,
            TaskAct::Abandon => AuditAct::TaskAbandon,
        }
    }
}

/// One recorded act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: Uuid,
    /// When, RFC 3339.
    pub at: String,
    /// The username of who did it.
    pub actor: String,
    pub act: AuditAct,
    /// What it acted on, the first [`TARGETS_NAMED`] by name or id, comma-separated.
    pub targets: String,
    /// How many things it acted on in all.
    pub target_count: i64,
    /// The act's particulars: a reason, a new role, a time.
    pub detail: String,
    /// Where from: the client's address, or [`COMMAND_LINE`].
    pub client: String,
}

impl AuditEntry {
    /// The targets as a person reads them: "a, b and 3 more".
    pub fn targets_words(&self) -> String {
        let named = if self.targets.is_empty() {
            0
        } else {
            self.targets.split(", ").count() as i64
        };
        let rest = self.target_count - named;
        if rest > 0 && named > 0 {
            format!("{} and {rest} more", self.targets)
        } else if rest > 0 {
            crate::words::plural(rest as u64, "item", "items")
        } else {
            self.targets.clone()
        }
    }
}

/// The Audit page's filters and page, every field as text so each bad one gets its own
/// message; absent or empty fields do not filter. The page's URL is this, form-encoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Who did it (a username, exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<String>,
    /// An [`AuditArea`]'s stored form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<String>,
    /// Text the targets contain: a task id, a username, a job's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// On or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// On or before this day (`YYYY-MM-DD`, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The page after this one: the `next` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Entries per page, 1 to 200 (50 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

/// A checked [`AuditQuery`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditSearch {
    pub who: Option<String>,
    pub area: Option<AuditArea>,
    pub target: Option<String>,
    pub span: DaySpan,
    /// Entries older than this one (ids grow with time).
    pub before: Option<Uuid>,
    pub limit: u64,
}

/// A page of the trail, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// The `before` of the next page; absent on the last.
    pub next: Option<String>,
}

impl AuditQuery {
    /// The query as a URL's query string (without `?`).
    pub fn to_query_string(&self) -> String {
        serde_urlencoded::to_string(self).unwrap_or_default()
    }

    /// Reads a page's URL query string (with or without `?`), leaving out parameters that
    /// are not the query's.
    pub fn from_query_string(query: &str) -> Result<Self, String> {
        const FIELDS: [&str; 7] = ["who", "area", "target", "from", "to", "before", "limit"];
        from_page_url(query, &FIELDS)
    }

    /// The same filters from their first page, every entry at once: what the CSV holds.
    pub fn whole(&self) -> Self {
        AuditQuery {
            before: None,
            limit: None,
            ..self.clone()
        }
    }

    /// Checks every field; the problems are `(field, message)`, one per bad field.
    pub fn check(&self) -> Result<AuditSearch, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let mut problem = |field: &str, message: String| problems.push((field.to_owned(), message));
        let given = |field: &Option<String>| {
            field
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        };
        let mut search = AuditSearch {
            limit: DEFAULT_PAGE_SIZE,
            ..AuditSearch::default()
        };
        if let Some(who) = given(&self.who) {
            match name_problem(&who, crate::task_query::MAX_OWNER_LEN) {
                Some(message) => problem("who", message),
                None => search.who = Some(who),
            }
        }
        if let Some(area) = given(&self.area) {
            match AuditArea::parse(&area) {
                Some(area) => search.area = Some(area),
                None => {
                    let names: Vec<&str> = AuditArea::ALL.iter().map(|a| a.as_str()).collect();
                    problem("area", format!("must be one of {}", names.join(", ")));
                }
            }
        }
        if let Some(target) = given(&self.target) {
            match name_problem(&target, MAX_TARGET_FILTER_LEN) {
                Some(message) => problem("target", message),
                None => search.target = Some(target),
            }
        }
        search.span = day_span(
            given(&self.from),
            given(&self.to),
            ["from", "to"],
            &mut problem,
        );
        if let Some(before) = given(&self.before) {
            match Uuid::parse_str(&before) {
                Ok(id) => search.before = Some(id),
                Err(_) => problem("before", "is not a page mark from this page".to_owned()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_act_reads_back_and_belongs_to_its_area() {
        for act in AuditAct::ALL {
            assert_eq!(AuditAct::parse(act.as_str()), Some(act));
            assert!(act.as_str().starts_with(act.area().as_str()));
        }
        for area in AuditArea::ALL {
            assert!(
                AuditAct::ALL.iter().any(|act| act.area() == area),
                "{area:?}"
            );
        }
    }

    #[test]
    fn every_bad_field_is_reported() {
        let query = AuditQuery::from_query_string(
            "who=%07&area=nope&target=x&from=yesterday&to=2026-13-01&before=3&limit=900",
        )
        .expect("readable");
        let problems = query.check().expect_err("invalid");
        let fields: Vec<&str> = problems.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(fields, ["who", "area", "from", "to", "before", "limit"]);
    }

    #[test]
    fn a_day_span_covers_whole_days() {
        let search = AuditQuery::from_query_string("from=2026-11-20&to=2026-11-20&area=users")
            .expect("readable")
            .check()
            .expect("valid");
        assert_eq!(search.area, Some(AuditArea::Users));
        assert_eq!(
            search.span.until.map(|t| t.to_rfc3339()),
            Some("2026-11-21T00:00:00+00:00".to_owned())
        );
    }

    #[test]
    fn targets_beyond_those_named_are_counted() {
        let entry = AuditEntry {
            id: Uuid::nil(),
            at: String::new(),
            actor: "ada".into(),
            act: AuditAct::TaskRetry,
            targets: "a, b".into(),
            target_count: 5,
            detail: String::new(),
            client: String::new(),
        };
        assert_eq!(entry.targets_words(), "a, b and 3 more");
    }
}
