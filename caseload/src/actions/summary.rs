//! A task's request in one line for people ("Email 3 people: 'Hello'"), shown in task lists
//! and on the task page in place of the stored spec, which can hold thousands of ids.

use std::collections::HashMap;

use bulkq_types::actions::{ActionKind, PEOPLE_IMPORT, component_label};
use bulkq_types::filter::PersonFilter;
use bulkq_types::words::{plural, quoted};
use queue::Task;
use sea_orm::ConnectionTrait;
use serde::Deserialize;
use uuid::Uuid;

use super::kinds::{Summarize, for_action};
use super::target::Target;
use crate::CaseloadError;
use crate::people_import::ImportSpec;
use crate::statuses::list_program_statuses;

/// Program statuses' names by code, loaded once for a page of summaries.
#[derive(Debug, Clone, Default)]
pub struct StatusNames(HashMap<String, String>);

impl StatusNames {
    pub async fn load<C: ConnectionTrait>(db: &C) -> Result<Self, CaseloadError> {
        let statuses = list_program_statuses(db).await?;
        Ok(StatusNames(
            statuses.into_iter().map(|s| (s.code, s.name)).collect(),
        ))
    }

    /// A status's name; its code if it was deleted since.
    pub(crate) fn name<'a>(&'a self, code: &'a str) -> &'a str {
        self.0.get(code).map_or(code, String::as_str)
    }
}

/// What `task` was asked to do, in one line; the action's label for a task that is not a
/// bulk action (or whose spec no longer reads).
pub fn summarize(task: &Task, statuses: &StatusNames) -> String {
    let spec = &task.execution_spec;
    let component = task.execution_component_name.as_str();
    let summary = match ActionKind::of_component(component) {
        Some(kind) => for_action(kind, Summarize { task, statuses }),
        None if component == PEOPLE_IMPORT => read::<ImportSpec>(spec).map(|spec| {
            let sync = if spec.full_sync { " (full sync)" } else { "" };
            format!("Import people from {}{sync}", quoted(&spec.file_name))
        }),
        None => None,
    };
    summary.unwrap_or_else(|| component_label(component).to_owned())
}

/// The spec as `S`, read in place (no copy of a long id list).
fn read<'a, S: Deserialize<'a>>(spec: &'a serde_json::Value) -> Option<S> {
    S::deserialize(spec).ok()
}

/// "3 people", or a query in words: "285 people matching 'ana', in Inactive". A query's
/// size is known once the task has counted it.
pub(crate) fn describe_target(target: &Target, task: &Task, statuses: &StatusNames) -> String {
    let filter = match target {
        Target::Ids(ids) => return plural(ids.len() as u64, "person", "people"),
        Target::Query(filter) => filter,
    };
    let counted = task
        .progress_total
        .map(|total| plural(total.max(0) as u64, "person", "people"));
    let criteria = describe_filter(filter, task.owner_id, statuses);
    match (counted, criteria.is_empty()) {
        (Some(people), true) => format!("everyone ({people})"),
        (None, true) => "everyone".to_owned(),
        (Some(people), false) => format!("{people} {}", criteria.join(", ")),
        (None, false) => format!("people {}", criteria.join(", ")),
    }
}

/// Each condition of `filter` as words; `owner` reads as "their".
fn describe_filter(filter: &PersonFilter, owner: Uuid, statuses: &StatusNames) -> Vec<String> {
    let mut words = Vec::new();
    if let Some(name) = &filter.name {
        words.push(format!("matching {}", quoted(name)));
    }
    if let Some(email) = &filter.email {
        words.push(format!("with an email starting {}", quoted(email)));
    }
    if let Some(text) = &filter.contains {
        words.push(format!("containing {}", quoted(text)));
    }
    if let Some(code) = &filter.program_status {
        words.push(format!("in {}", statuses.name(code)));
    }
    if let Some(coach) = filter.coach_id {
        words.push(
            if coach == owner {
                "in their caseload"
            } else {
                "in another coach's caseload"
            }
            .to_owned(),
        );
    }
    if let Some(watcher) = filter.watched_by {
        words.push(
            if watcher == owner {
                "they watch"
            } else {
                "someone else watches"
            }
            .to_owned(),
        );
    }
    if filter.has_open_alerts {
        words.push("with open alerts".to_owned());
    }
    words
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use queue::TaskStatus;
    use serde::Serialize;

    use bulkq_types::export::{ALL_COLUMNS, ExportColumn};

    use super::*;
    use crate::actions::kinds::{EmailSpec, ExportSpec, StatusChangeSpec, WatchSpec};
    use crate::email::EmailContent;
    use crate::status_change::StatusChange;

    const OWNER: Uuid = Uuid::from_u128(7);

    fn task(action: &str, spec: impl Serialize, counted: Option<i64>) -> Task {
        let now = Utc::now();
        Task {
            id: Uuid::now_v7(),
            created_date: now,
            created_by: "lee".into(),
            modified_date: now,
            modified_by: "lee".into(),
            owner_id: OWNER,
            run_as_id: OWNER,
            execution_component_name: action.into(),
            execution_spec: serde_json::to_value(spec).unwrap(),
            execution_state: serde_json::json!({}),
            workflow_status: TaskStatus::Queued,
            workflow_status_desc: None,
            run_at: now,
            priority: 0,
            attempt: 0,
            max_attempts: 5,
            unique_key: None,
            scheduling_started_date: None,
            scheduled_by_process: None,
            execution_started_date: None,
            workflow_stopped_date: None,
            progress_done: 0,
            progress_total: counted,
            lease_version: 0,
            crash_count: 0,
        }
    }

    fn names() -> StatusNames {
        StatusNames(HashMap::from([("INACTIVE".into(), "Inactive".into())]))
    }

    fn ids(n: u128) -> Target {
        Target::Ids((0..n).map(Uuid::from_u128).collect())
    }

    fn query(filter: PersonFilter) -> Target {
        Target::Query(filter)
    }

    #[test]
    fn each_action_reads_as_a_sentence() {
        let email = EmailSpec {
            target: ids(3),
            content: EmailContent {
                subject: "Hello\tthere".into(),
                body: "Body".into(),
                cc: Vec::new(),
            },
        };
        assert_eq!(
            summarize(&task(ActionKind::Email.component(), email, None), &names()),
            "Email 3 people: 'Hello there'"
        );

        let change = StatusChangeSpec {
            target: query(PersonFilter {
                name: Some("ana".into()),
                ..PersonFilter::default()
            }),
            change: StatusChange {
                to_status: "INACTIVE".into(),
                reason: "left".into(),
            },
        };
        assert_eq!(
            summarize(
                &task(
                    ActionKind::ProgramStatusChange.component(),
                    change,
                    Some(285)
                ),
                &names()
            ),
            "Change status of 285 people matching 'ana' to Inactive"
        );

        let watch = WatchSpec { target: ids(1) };
        assert_eq!(
            summarize(&task(ActionKind::Watch.component(), watch, None), &names()),
            "Watch 1 person"
        );

        let my_watch_list = WatchSpec {
            target: query(PersonFilter {
                watched_by: Some(OWNER),
                ..PersonFilter::default()
            }),
        };
        assert_eq!(
            summarize(
                &task(ActionKind::Unwatch.component(), my_watch_list, Some(12)),
                &names()
            ),
            "Unwatch 12 people they watch"
        );
    }

    #[test]
    fn exports_name_their_columns_and_queries_their_conditions() {
        let everyone = ExportSpec {
            target: query(PersonFilter::default()),
            columns: ALL_COLUMNS.to_vec(),
            row_cap: 10,
        };
        assert_eq!(
            summarize(
                &task(ActionKind::Export.component(), everyone, Some(1_204)),
                &names()
            ),
            "Export everyone (1,204 people) to CSV (all columns)"
        );
        let some = ExportSpec {
            target: query(PersonFilter {
                email: Some("ana@".into()),
                contains: Some("smith".into()),
                program_status: Some("GONE".into()),
                coach_id: Some(OWNER),
                ..PersonFilter::default()
            }),
            columns: vec![ExportColumn::FirstName, ExportColumn::Email],
            row_cap: 10,
        };
        assert_eq!(
            summarize(&task(ActionKind::Export.component(), some, None), &names()),
            "Export people with an email starting 'ana@', containing 'smith', in GONE, \
             in their caseload to CSV (First name, Email)"
        );
    }

    #[test]
    fn other_tasks_and_unreadable_specs_fall_back_to_the_label() {
        let names = names();
        assert_eq!(
            summarize(&task("billing.invoice", "x", None), &names),
            "billing.invoice"
        );
        assert_eq!(
            summarize(
                &task(
                    ActionKind::Email.component(),
                    serde_json::json!({"target": 1}),
                    None
                ),
                &names
            ),
            "Email"
        );
    }
}
