//! Periodic jobs: work that runs on a schedule (a fixed interval or a cron expression), on one
//! node per due time across the whole cluster.
//!
//! Every node runs every registered job's loop; the shared `queue_periodic_job` row decides
//! who runs a due time. The row holds the next due time; at that time each node tries to
//! advance `last_due_at` to it with a guarded UPDATE (`... WHERE last_due_at < due`), and only
//! the one whose UPDATE changed the row runs the job. The winner also moves the next due time
//! on, so the others go back to sleep. Due times come from the database's clock, so nodes
//! with skewed clocks agree on them.
//!
//! **Missed runs** (every node down over one or more due times): when a node comes back,
//! the job runs once, at once (its context names the earliest missed due time), and then
//! continues on its schedule. The other missed due times are not replayed: periodic work
//! here (rescue, pruning, reports) wants the current state dealt with, not a burst of stale
//! runs.
//!
//! A run also holds the scheduler lock `periodic:<name>`, with ShedLock's semantics: taken
//! for [`PeriodicJob::lock_at_most_for`] and extended by that much again while the run
//! lasts, so a run that outlives its interval is not overlapped by the next due time on
//! another node; and kept after the run until [`PeriodicJob::lock_at_least_for`] from its
//! start, so a quick job is not run again by a node whose clock is a little behind. A due
//! time that finds the lock held is recorded as skipped (counted, with its time).
//!
//! Admins can pause and resume a job, and make it due now (see `Store::periodic_run_now`).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::QueueError;
use crate::store::Store;

pub use crate::store::entity::periodic_job::Model as PeriodicJobStatus;

/// When a periodic job is due.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Every so often, counted from the first due time (no drift from run times).
    Every(Duration),
    /// A cron expression (5 fields, or 6 with seconds first), in UTC.
    Cron {
        expression: String,
        cron: Box<croner::Cron>,
    },
}

impl Schedule {
    /// A cron schedule; a malformed expression is [`QueueError::Invalid`].
    pub fn cron(expression: &str) -> Result<Self, QueueError> {
        let cron = croner::Cron::from_str(expression)
            .map_err(|e| QueueError::Invalid(format!("bad cron expression {expression:?}: {e}")))?;
        Ok(Schedule::Cron {
            expression: expression.to_owned(),
            cron: Box::new(cron),
        })
    }

    /// How the schedule is shown and stored (`every 5s`, or the cron expression).
    pub fn describe(&self) -> String {
        match self {
            Schedule::Every(interval) => format!("every {}", humanize(*interval)),
            Schedule::Cron { expression, .. } => expression.clone(),
        }
    }

    /// The first due time of a job that has never run: now for an interval (it starts at
    /// once), the next match after now for a cron expression.
    pub(crate) fn first_due(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>, QueueError> {
        match self {
            Schedule::Every(_) => Ok(now),
            Schedule::Cron { .. } => self.next_after(now, now),
        }
    }

    /// The due time after `due` that is later than `now`: the next one on the grid for an
    /// interval (skipping any missed while nobody ran), the next match for cron.
    pub(crate) fn next_after(
        &self,
        due: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, QueueError> {
        match self {
            Schedule::Every(interval) => {
                let step = chrono::Duration::from_std(*interval)
                    .map_err(|e| QueueError::Invalid(e.to_string()))?;
                let step_ns = step.num_nanoseconds().unwrap_or(i64::MAX).max(1);
                let behind_ns = (now - due).num_nanoseconds().unwrap_or(i64::MAX).max(0);
                let steps = behind_ns / step_ns + 1;
                Ok(due + chrono::Duration::nanoseconds(step_ns.saturating_mul(steps)))
            }
            Schedule::Cron { cron, expression } => cron
                .find_next_occurrence(&Ord::max(due, now), false)
                .map_err(|e| QueueError::Invalid(format!("cron {expression:?}: {e}"))),
        }
    }
}

fn humanize(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// The scheduler lock the runs of job `name` hold.
pub(crate) fn lock_name(name: &str) -> String {
    format!("periodic:{name}")
}

/// What a run of a periodic job gets.
pub struct PeriodicContext {
    pub store: Store,
    /// The due time this run is for.
    pub due: DateTime<Utc>,
    /// The node running it.
    pub node_id: String,
}

/// The work of a periodic job. An `Err` is recorded as the run's result (and logged); the
/// job runs again at its next due time either way.
#[async_trait::async_trait]
pub trait PeriodicTask: Send + Sync + 'static {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String>;
}

/// A periodic job as registered.
#[derive(Clone)]
pub struct PeriodicJob {
    pub name: String,
    pub schedule: Schedule,
    /// How long a run holds the job's scheduler lock before it must extend it: a bound on
    /// how long a run that died keeps the next due times from running.
    pub lock_at_most_for: Duration,
    /// How long after its start a run keeps the lock even when it finished sooner.
    pub lock_at_least_for: Duration,
    pub task: Arc<dyn PeriodicTask>,
}

impl PeriodicJob {
    /// Default [`PeriodicJob::lock_at_most_for`].
    pub const LOCK_AT_MOST_DEFAULT: Duration = Duration::from_secs(600);

    /// A job holding its lock for at most [`Self::LOCK_AT_MOST_DEFAULT`] (extended while a
    /// run lasts) and no longer than its run.
    pub fn new(name: impl Into<String>, schedule: Schedule, task: impl PeriodicTask) -> Self {
        Self {
            name: name.into(),
            schedule,
            lock_at_most_for: Self::LOCK_AT_MOST_DEFAULT,
            lock_at_least_for: Self::LOCK_AT_LEAST_DEFAULT,
            task: Arc::new(task),
        }
    }

    /// Default [`PeriodicJob::lock_at_least_for`].
    pub const LOCK_AT_LEAST_DEFAULT: Duration = Duration::ZERO;

    /// Keeps the lock for half of `interval` after a run's start: a node whose clock lags
    /// cannot run the job again within that, and the next due time finds it free.
    pub fn with_lock_at_least_half_of(self, interval: Duration) -> Self {
        self.with_lock_at_least_for(interval / 2)
    }

    pub fn with_lock_at_most_for(mut self, duration: Duration) -> Self {
        self.lock_at_most_for = duration;
        self
    }

    pub fn with_lock_at_least_for(mut self, duration: Duration) -> Self {
        self.lock_at_least_for = duration;
        self
    }

    /// How often a run extends its lock: three times per `lock_at_most_for`, so one slow
    /// extension does not let the lock lapse.
    pub(crate) fn lock_extension_every(&self) -> Duration {
        (self.lock_at_most_for / 3).max(Duration::from_millis(10))
    }

    /// The scheduler lock a run holds.
    pub(crate) fn lock_name(&self) -> String {
        lock_name(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn intervals_stay_on_their_grid_and_skip_missed_due_times() {
        let every = Schedule::Every(Duration::from_secs(10));
        assert_eq!(every.next_after(at(0), at(0)).unwrap(), at(10));
        assert_eq!(every.next_after(at(0), at(3)).unwrap(), at(10));
        // Nobody ran for a minute: the next due time is the next on the grid, not a backlog.
        assert_eq!(every.next_after(at(0), at(61)).unwrap(), at(70));
        assert_eq!(every.describe(), "every 10s");
    }

    #[test]
    fn cron_expressions_give_their_next_match() {
        let hourly = Schedule::cron("0 * * * *").unwrap();
        let start = DateTime::parse_from_rfc3339("2026-11-21T10:15:00Z")
            .unwrap()
            .to_utc();
        let next = hourly.next_after(start, start).unwrap();
        assert_eq!(next.to_rfc3339(), "2026-11-21T11:00:00+00:00");
        assert!(Schedule::cron("every tuesday").is_err());
    }
}
