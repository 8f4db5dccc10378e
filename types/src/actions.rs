//! The bulk actions by name, and what each has done so far: the words browser and server
//! use for them.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Component names of the bulk actions' tasks (the queue's `execution_component_name`).
pub const EXPORT: &str = "caseload.export";
pub const PROGRAM_STATUS_CHANGE: &str = "caseload.program_status_change";
pub const WATCH: &str = "caseload.watch";
pub const UNWATCH: &str = "caseload.unwatch";
pub const EMAIL: &str = "caseload.email";
/// The CSV import of people (an admin's task, not a bulk action on a target).
pub const PEOPLE_IMPORT: &str = "caseload.people_import";

/// The bulk actions, in the order the dashboard offers them.
pub const ALL: [&str; 5] = [EXPORT, PROGRAM_STATUS_CHANGE, WATCH, UNWATCH, EMAIL];

/// The name people see for an action; other components keep their own name.
pub fn action_label(component: &str) -> &str {
    match component {
        EXPORT => "Export",
        PROGRAM_STATUS_CHANGE => "Change status",
        WATCH => "Watch",
        UNWATCH => "Unwatch",
        EMAIL => "Email",
        PEOPLE_IMPORT => "Import people",
        other => other,
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
///   `failed` (bounced, or interrupted mid-send and deliberately not repeated).
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
    fn every_action_has_a_label() {
        for action in ALL {
            assert_ne!(action_label(action), action);
        }
        assert_eq!(action_label("example.hello"), "example.hello");
    }
}
