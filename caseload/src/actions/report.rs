//! What a bulk action did so far, kept in its checkpoint and shown to its owner.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::access::BatchReport;

/// How many ids of each kind a report lists, so a user can look up a few of the people an
/// action skipped without the checkpoint growing with the target.
pub const SAMPLE_SIZE: usize = 20;

/// The running tally of a bulk action. Which counts apply depends on the action:
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
    /// Adds what one batch of a domain operation did.
    pub fn add(&mut self, batch: &BatchReport) {
        self.changed += batch.changed;
        self.unchanged += batch.unchanged;
        self.add_skipped(&batch.forbidden, &batch.unknown);
    }

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
            report.add(&BatchReport {
                changed: 3,
                unchanged: 1,
                forbidden: vec![Uuid::now_v7()],
                unknown: unknown.clone(),
            });
        }
        assert_eq!((report.changed, report.unchanged), (6, 2));
        assert_eq!((report.forbidden, report.unknown), (2, 30));
        assert_eq!(report.forbidden_sample.len(), 2);
        assert_eq!(report.unknown_sample.len(), SAMPLE_SIZE);
        assert_eq!(report.unknown_sample[..15], unknown[..]);
    }
}
