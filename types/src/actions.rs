//! The bulk actions by name, and what each has done so far: the words browser and server
//! use for them.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The bulk actions. Everything that differs between them in browser and server is asked of
/// this enum (or, in `caseload`, of each action's module), so a match on it has no fallback
/// arm and a new action is a compile error wherever it must be handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Export,
    ProgramStatusChange,
    Watch,
    Unwatch,
    Email,
    CoachReassignment,
    EarlyAlert,
}

impl ActionKind {
    /// Every action, in the order the dashboard offers them.
    pub const ALL: [ActionKind; 7] = [
        ActionKind::Export,
        ActionKind::ProgramStatusChange,
        ActionKind::CoachReassignment,
        ActionKind::EarlyAlert,
        ActionKind::Watch,
        ActionKind::Unwatch,
        ActionKind::Email,
    ];

    /// The component name of the action's tasks (the queue's `execution_component_name`).
    pub const fn component(self) -> &'static str {
        match self {
            ActionKind::Export => "caseload.export",
            ActionKind::ProgramStatusChange => "caseload.program_status_change",
            ActionKind::Watch => "caseload.watch",
            ActionKind::Unwatch => "caseload.unwatch",
            ActionKind::Email => "caseload.email",
            ActionKind::CoachReassignment => "caseload.coach_reassignment",
            ActionKind::EarlyAlert => "caseload.early_alert",
        }
    }

    /// The action whose tasks have `component`, if one has.
    pub fn of_component(component: &str) -> Option<ActionKind> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.component() == component)
    }

    /// The name people see for the action.
    pub const fn label(self) -> &'static str {
        match self {
            ActionKind::Export => "Export",
            ActionKind::ProgramStatusChange => "Change status",
            ActionKind::Watch => "Watch",
            ActionKind::Unwatch => "Unwatch",
            ActionKind::Email => "Email",
            ActionKind::CoachReassignment => "Reassign coach",
            ActionKind::EarlyAlert => "Early alert",
        }
    }

    /// The JSON API's path for submitting the action, under `/api/1`.
    pub const fn api_path(self) -> &'static str {
        match self {
            ActionKind::Export => "/caseload/exports",
            ActionKind::ProgramStatusChange => "/caseload/program-status-changes",
            ActionKind::Watch => "/caseload/watches",
            ActionKind::Unwatch => "/caseload/unwatches",
            ActionKind::Email => "/caseload/emails",
            ActionKind::CoachReassignment => "/caseload/coach-reassignments",
            ActionKind::EarlyAlert => "/caseload/early-alerts",
        }
    }

    /// How the action's owner reads its [`ActionReport`].
    pub const fn report_words(self) -> ReportWords {
        let (changed, unchanged) = match self {
            ActionKind::Export => ("Rows exported", None),
            ActionKind::ProgramStatusChange => ("Status changed", Some("Already in that status")),
            ActionKind::Watch => ("Now watched", Some("Already watched")),
            ActionKind::Unwatch => ("No longer watched", Some("Were not watched")),
            ActionKind::Email => ("Sent", Some("Already handled by an earlier attempt")),
            ActionKind::CoachReassignment => ("Moved", Some("Already with that coach")),
            ActionKind::EarlyAlert => ("Alerts raised", None),
        };
        ReportWords {
            changed,
            unchanged,
            sends_email: matches!(self, ActionKind::Email),
            tells_coaches: matches!(self, ActionKind::EarlyAlert | ActionKind::CoachReassignment),
        }
    }
}

/// The words of an action's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportWords {
    /// What `changed` counts.
    pub changed: &'static str,
    /// What `unchanged` counts; `None` for an action that leaves nothing as it was.
    pub unchanged: Option<&'static str>,
    /// Whether the email counts (no address, deferred, failed) apply.
    pub sends_email: bool,
    /// Whether the coach notice counts (`coaches_told`, `coaches_not_told`) apply.
    pub tells_coaches: bool,
}

/// The component name of the CSV import of people (an admin's task, not a bulk action on a
/// target).
pub const PEOPLE_IMPORT: &str = "caseload.people_import";

/// The name people see for a task's component: a bulk action's label, "Import people", or
/// the component's own name.
pub fn component_label(component: &str) -> &str {
    match ActionKind::of_component(component) {
        Some(kind) => kind.label(),
        None if component == PEOPLE_IMPORT => "Import people",
        None => component,
    }
}

/// How many ids of each kind a report lists, so a user can look up a few of the people an
/// action skipped without the checkpoint growing with the target.
pub const SAMPLE_SIZE: usize = 20;

/// The running tally of a bulk action, kept in its checkpoint and shown to its owner. Which
/// counts apply depends on the action:
/// - `changed`: people whose status changed, newly watched or unwatched, rows exported;
///   for email, messages sent;
/// - `unchanged`: people already in the wanted state (or done by an earlier run);
/// - `forbidden` / `unknown`: requested ids outside the run_as user's scope, or naming nobody;
/// - email only: `without_address` (skipped), `deferred` (waiting for another try),
///   `failed` (bounced, or interrupted mid-send and deliberately not repeated);
/// - actions that tell coaches: `coaches_told`, `coaches_not_told`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ActionReport {
    pub changed: u64,
    pub unchanged: u64,
    pub forbidden: u64,
    pub unknown: u64,
    pub without_address: u64,
    pub deferred: u64,
    pub failed: u64,
    /// Coaches emailed about their people (early alerts, coach reassignment).
    pub coaches_told: u64,
    /// Coaches not emailed: no address on file, or the message failed.
    pub coaches_not_told: u64,
    /// Up to [`SAMPLE_SIZE`] of the forbidden ids.
    pub forbidden_sample: Vec<Uuid>,
    /// Up to [`SAMPLE_SIZE`] of the unknown ids.
    pub unknown_sample: Vec<Uuid>,
}

impl ActionReport {
    /// Adds requested people a batch left alone: outside the scope, or naming nobody.
    pub fn add_skipped(&mut self, forbidden: &[Uuid], unknown: &[Uuid]) {
        self.forbidden += forbidden.len() as u64;
        self.unknown += unknown.len() as u64;
        sample(&mut self.forbidden_sample, forbidden);
        sample(&mut self.unknown_sample, unknown);
    }
}

fn sample(kept: &mut Vec<Uuid>, more: &[Uuid]) {
    let room = SAMPLE_SIZE.saturating_sub(kept.len());
    kept.extend(more.iter().take(room));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_people_are_counted_in_full_but_sampled() {
        let mut report = ActionReport::default();
        let unknown: Vec<Uuid> = (0..15).map(|_| Uuid::now_v7()).collect();
        for _ in 0..2 {
            report.add_skipped(&[Uuid::now_v7()], &unknown);
        }
        assert_eq!((report.forbidden, report.unknown), (2, 30));
        assert_eq!(report.forbidden_sample.len(), 2);
        assert_eq!(report.unknown_sample.len(), SAMPLE_SIZE);
        assert_eq!(report.unknown_sample[..15], unknown[..]);
    }

    #[test]
    fn every_action_is_found_by_its_component_and_has_a_label() {
        for kind in ActionKind::ALL {
            assert_eq!(ActionKind::of_component(kind.component()), Some(kind));
            assert_eq!(component_label(kind.component()), kind.label());
        }
        assert_eq!(component_label(PEOPLE_IMPORT), "Import people");
        assert_eq!(component_label("example.hello"), "example.hello");
        assert_eq!(ActionKind::of_component("example.hello"), None);
    }
}
