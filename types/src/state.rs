//! The task state machine: the one status enum, the one [`Transition`] enum every state change
//! after the claim goes through, and the pure [`after_attempt`] decision. Nothing here touches
//! the database. This is the machine's one drawing; the `from` lists of
//! [`Transition::allowed_from`] are what it draws.
//!
//! ```text
//!   enqueue (inside the caller's transaction)
//!      │
//!      ▼
//!   QUEUED ──claim: run_at due, component not paused──► EXECUTING ──Complete──► COMPLETED
//!    ▲  ▲                                                   │
//!    │  └─────────── Retry / HandBack / Yield ──────────────┼──Fail───► FAILURE
//!    │                                                      └──Error──► ERROR
//!    │
//!    └── Requeue (admin, fresh attempts) ◄── SCHEDULING / EXECUTING (stalled), FAILURE,
//!                                            ERROR, ABANDONED
//!
//!   QUEUED / SCHEDULING / EXECUTING / FAILURE / ERROR ──Abandon (admin)──► ABANDONED
//!                         (an owner's cancel: from the first three only)
//! ```
//!
//! - The claim is the store's, not a [`Transition`]: one UPDATE takes a task from QUEUED to
//!   EXECUTING, and SCHEDULING, its first step, is recorded in the task's history only.
//! - Complete, Retry, HandBack, Yield, Fail and Error start from [`TaskStatus::RUNNING`]
//!   (SCHEDULING or EXECUTING; a row left in SCHEDULING by an older version is treated as
//!   EXECUTING).
//! - Retry: a transient error, panic or timeout with attempts left, or a rescue from a dead
//!   node; the attempt is spent. HandBack: shutdown; the attempt is not spent. Yield: the
//!   task gave its slot to another owner's waiting work at a batch boundary, or found its
//!   action's running limit reached as it started; the attempt is not spent and it keeps
//!   its place.
//! - Fail: a permanent error, the attempts exhausted, a rescue with none left, or a task
//!   parked after too many crashes. Error: the queue could not run the task (no executor
//!   for its component).
//! - COMPLETED is final; no worker moves a task out of FAILURE, ERROR or ABANDONED.
//!
//! # Leases
//! Every task row carries a `lease_version`. Claiming bumps it, and so does every transition
//! that ends a claim (all [`Transition`]s). A worker remembers the version it claimed and every
//! write it makes (checkpoint, outcome) is guarded by `lease_version = <claimed>`, so once the
//! rescuer or an administrator has moved the task on, the stale worker's writes match no row.

use std::time::Duration;

use chrono::{DateTime, Utc};
#[cfg(feature = "sea-orm")]
use sea_orm::sea_query::StringLen;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where a task is in its life. Stored as the upper-case name in `workflow_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "sea-orm",
    derive(sea_orm::EnumIter, sea_orm::DeriveActiveEnum),
    sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// Waiting to run. Enqueue puts a task here; a retry, a rescue, a shutdown hand-back or an
    /// admin's requeue put it back. A node's claim moves it to `Executing` (recording
    /// `Scheduling` in the history only) once its `run_at` is due and its component is not
    /// paused.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "QUEUED"))]
    Queued,
    /// Claimed by a node (`scheduled_by_process`) that has a free executor slot for it. The
    /// claiming UPDATE moves it straight on to `Executing` (the node starts what it claims
    /// at once), so this status appears in the task's history only; the rescuer treats a
    /// row in it (written by an older version) like `Executing`.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "SCHEDULING"))]
    Scheduling,
    /// An executor is running it. The worker moves it to `Completed`, `Queued` (retry or
    /// hand-back), `Failure` or `Error`; the rescuer and admins may take it away.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "EXECUTING"))]
    Executing,
    /// Done. Final; kept until the pruner removes it after the retention period.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "COMPLETED"))]
    Completed,
    /// The queue machinery could not run the task (e.g. no executor is registered for its
    /// component). Only an admin retry or abandon moves it on.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "ERROR"))]
    Error,
    /// The work failed for good: a permanent error, or out of attempts. Only an admin retry or
    /// abandon moves it on.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "FAILURE"))]
    Failure,
    /// An administrator gave up on it. Only an admin retry moves it on.
    #[cfg_attr(feature = "sea-orm", sea_orm(string_value = "ABANDONED"))]
    Abandoned,
}

impl TaskStatus {
    /// Every status, in the order of a task's life: the columns of the queue's tables.
    pub const ALL: [TaskStatus; 7] = [
        Self::Queued,
        Self::Scheduling,
        Self::Executing,
        Self::Completed,
        Self::Failure,
        Self::Error,
        Self::Abandoned,
    ];
    /// Statuses in which a task still has work ahead of it; a `unique_key` is unique among
    /// these, and the pruner never deletes them.
    pub const ACTIVE: [TaskStatus; 3] = [Self::Queued, Self::Scheduling, Self::Executing];
    /// Statuses in which a node holds the task (and may be rescued from it).
    pub const RUNNING: [TaskStatus; 2] = [Self::Scheduling, Self::Executing];
    /// Statuses no worker will move a task out of.
    pub const TERMINAL: [TaskStatus; 4] =
        [Self::Completed, Self::Error, Self::Failure, Self::Abandoned];
    /// Statuses of tasks that ended badly: what an administrator looks at, and what the
    /// derived column `problem_status` holds (NULL for the other statuses).
    pub const PROBLEMS: [TaskStatus; 3] = [Self::Failure, Self::Error, Self::Abandoned];

    /// The status as people read it: "Queued", "Failure".
    pub const fn label(self) -> &'static str {
        match self {
            Self::Queued => "Queued",
            Self::Scheduling => "Scheduling",
            Self::Executing => "Executing",
            Self::Completed => "Completed",
            Self::Error => "Error",
            Self::Failure => "Failure",
            Self::Abandoned => "Abandoned",
        }
    }

    /// Whether the status is one of [`TaskStatus::PROBLEMS`].
    pub fn is_problem(&self) -> bool {
        Self::PROBLEMS.contains(self)
    }

    /// The name stored in the database (and used in the raw SQL of the store).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "QUEUED",
            Self::Scheduling => "SCHEDULING",
            Self::Executing => "EXECUTING",
            Self::Completed => "COMPLETED",
            Self::Error => "ERROR",
            Self::Failure => "FAILURE",
            Self::Abandoned => "ABANDONED",
        }
    }

    /// True once no worker will move the task on by itself.
    pub fn is_terminal(self) -> bool {
        Self::TERMINAL.contains(&self)
    }

    /// Whether the task's owner (or an admin) may cancel it: it has not finished yet. A
    /// cancel is an abandon the owner may make.
    pub fn can_cancel(self) -> bool {
        Self::ACTIVE.contains(&self)
    }

    /// Whether an administrator may abandon a task in this status.
    pub fn can_abandon(self) -> bool {
        Transition::Abandon {
            reason: String::new(),
        }
        .allowed_from()
        .contains(&self)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A change of state that ends a claim (or, for admins, reopens a task). The store turns each
/// into one guarded UPDATE; see `store::transition`.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// The executor succeeded: → `Completed`.
    Complete,
    /// Try again later, this attempt spent: → `Queued` with `run_at = at`.
    Retry { at: DateTime<Utc>, error: String },
    /// Give up: → `Failure`.
    Fail { error: String },
    /// The queue could not run the task: → `Error`.
    Error { desc: String },
    /// Interrupted by shutdown: → `Queued` now, and the attempt is given back.
    HandBack,
    /// Gave its slot to another owner's waiting work at a batch boundary: → `Queued` with
    /// its `run_at` kept (its place among its owner's tasks), and the attempt is given back.
    Yield,
    /// An administrator gave up on the task: → `Abandoned`.
    Abandon { reason: String },
    /// An administrator asked for another go: → `Queued` now, with a fresh attempt budget.
    /// From a running status it takes the task back from its node at once, as the rescuer
    /// would once the node's heartbeat stops: for a stalled task whose node still beats.
    Requeue,
}

impl Transition {
    /// The status the task ends up in.
    pub fn target(&self) -> TaskStatus {
        match self {
            Self::Complete => TaskStatus::Completed,
            Self::Retry { .. } | Self::HandBack | Self::Yield | Self::Requeue => TaskStatus::Queued,
            Self::Fail { .. } => TaskStatus::Failure,
            Self::Error { .. } => TaskStatus::Error,
            Self::Abandon { .. } => TaskStatus::Abandoned,
        }
    }

    /// The statuses the transition may start from; the store puts them in the UPDATE's guard.
    pub fn allowed_from(&self) -> &'static [TaskStatus] {
        match self {
            Self::Complete
            | Self::Retry { .. }
            | Self::Fail { .. }
            | Self::Error { .. }
            | Self::HandBack
            | Self::Yield => &TaskStatus::RUNNING,
            Self::Abandon { .. } => &[
                TaskStatus::Queued,
                TaskStatus::Scheduling,
                TaskStatus::Executing,
                TaskStatus::Failure,
                TaskStatus::Error,
            ],
            Self::Requeue => &[
                TaskStatus::Scheduling,
                TaskStatus::Executing,
                TaskStatus::Failure,
                TaskStatus::Error,
                TaskStatus::Abandoned,
            ],
        }
    }

    /// The text stored in `workflow_status_desc` (and in the task's history).
    pub fn description(&self) -> Option<&str> {
        match self {
            Self::Retry { error, .. } | Self::Fail { error } => Some(error),
            Self::Error { desc } => Some(desc),
            Self::Abandon { reason } => Some(reason),
            Self::HandBack => Some("interrupted by shutdown; handed back"),
            Self::Yield => Some(
                "went back to the queue for another owner's turn or its action's running limit",
            ),
            Self::Complete | Self::Requeue => None,
        }
    }
}

/// How an attempt ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    /// The executor returned `Ok`.
    Succeeded,
    /// The executor returned a transient error.
    Transient(String),
    /// The executor returned a permanent error.
    Permanent(String),
    /// The executor panicked; counted as transient, since a panic usually means a bug or a
    /// bad moment rather than bad input, and the process survives it.
    Panicked(String),
    /// The component's execution timeout elapsed; the work was cancelled.
    TimedOut(Duration),
    /// Shutdown cancelled the work before it finished.
    Interrupted,
    /// Stopped at a batch boundary to give its slot to another owner's waiting work.
    Yielded,
}

/// How a component retries transient failures.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Delay before the second attempt; doubled for every further attempt. Default
    /// [`RetryPolicy::BASE_DELAY_DEFAULT`] (1 s): long enough to get past a blip.
    pub base_delay: Duration,
    /// Upper bound of the doubled delay. Default [`RetryPolicy::MAX_DELAY_DEFAULT`] (10 min),
    /// so a task with many attempts still comes back within the hour.
    pub max_delay: Duration,
    /// Extra random-looking delay, as a fraction of the delay (0.0 to 1.0). Default
    /// [`RetryPolicy::JITTER_DEFAULT`] (0.25): spreads out tasks that failed together so
    /// they do not all come back at the same instant.
    pub jitter: f64,
}

impl RetryPolicy {
    pub const BASE_DELAY_DEFAULT: Duration = Duration::from_secs(1);
    pub const MAX_DELAY_DEFAULT: Duration = Duration::from_secs(600);
    pub const JITTER_DEFAULT: f64 = 0.25;

    /// The delay before the attempt after `attempt` (1-based): `base * 2^(attempt-1)`, capped,
    /// plus a jitter derived from the task id so the function stays pure and repeatable.
    pub fn backoff(&self, task_id: Uuid, attempt: i32) -> Duration {
        let exponent = u32::try_from(attempt.saturating_sub(1))
            .unwrap_or(0)
            .min(30);
        let delay = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let jitter = self.jitter.clamp(0.0, 1.0) * unit_interval(task_id, attempt);
        delay + delay.mul_f64(jitter)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base_delay: Self::BASE_DELAY_DEFAULT,
            max_delay: Self::MAX_DELAY_DEFAULT,
            jitter: Self::JITTER_DEFAULT,
        }
    }
}

/// A number in `[0, 1)` that looks random but depends only on the task and attempt: jitter
/// without a random number generator, so [`after_attempt`] is a pure function.
fn unit_interval(task_id: Uuid, attempt: i32) -> f64 {
    let (high, low) = task_id.as_u64_pair();
    // SplitMix64 finaliser: mixes every input bit into every output bit.
    let mut x = high ^ low.rotate_left(17) ^ u64::from(attempt.unsigned_abs());
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The part of a task row that decides what happens after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptInfo {
    pub task_id: Uuid,
    /// The attempt that just ended (1 for the first).
    pub attempt: i32,
    pub max_attempts: i32,
}

/// Decides what happens to a task after an attempt ended with `outcome`.
///
/// Transient failures (errors, panics, timeouts) are retried with exponential backoff until
/// the attempt budget is spent; permanent errors fail at once; shutdown hands the task back.
pub fn after_attempt(
    task: AttemptInfo,
    outcome: &AttemptOutcome,
    policy: &RetryPolicy,
    now: DateTime<Utc>,
) -> Transition {
    let retryable = |error: String| {
        if task.attempt >= task.max_attempts {
            Transition::Fail {
                error: format!(
                    "attempts exhausted ({} of {}): {error}",
                    task.attempt, task.max_attempts
                ),
            }
        } else {
            let delay = policy.backoff(task.task_id, task.attempt);
            let at = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
            Transition::Retry { at, error }
        }
    };
    match outcome {
        AttemptOutcome::Succeeded => Transition::Complete,
        AttemptOutcome::Permanent(error) => Transition::Fail {
            error: error.clone(),
        },
        AttemptOutcome::Transient(error) => retryable(error.clone()),
        AttemptOutcome::Panicked(message) => retryable(format!("panicked: {message}")),
        AttemptOutcome::TimedOut(limit) => retryable(format!("timed out after {limit:?}")),
        AttemptOutcome::Interrupted => Transition::HandBack,
        AttemptOutcome::Yielded => Transition::Yield,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_cancel_is_an_abandon_of_unfinished_work() {
        for status in TaskStatus::ALL {
            assert_eq!(status.can_cancel(), !status.is_terminal(), "{status}");
            if status.can_cancel() {
                assert!(status.can_abandon(), "{status}");
            }
        }
    }

    fn outcome() -> impl Strategy<Value = AttemptOutcome> {
        prop_oneof![
            Just(AttemptOutcome::Succeeded),
            "[a-z]{0,8}".prop_map(AttemptOutcome::Transient),
            "[a-z]{0,8}".prop_map(AttemptOutcome::Permanent),
            "[a-z]{0,8}".prop_map(AttemptOutcome::Panicked),
            (1u64..10_000).prop_map(|ms| AttemptOutcome::TimedOut(Duration::from_millis(ms))),
            Just(AttemptOutcome::Interrupted),
            Just(AttemptOutcome::Yielded),
        ]
    }

    fn policy() -> impl Strategy<Value = RetryPolicy> {
        (1u64..5_000, 1u64..1_000_000, 0.0f64..=1.0).prop_map(|(base, max, jitter)| RetryPolicy {
            base_delay: Duration::from_millis(base),
            max_delay: Duration::from_millis(max),
            jitter,
        })
    }

    proptest! {
        #[test]
        fn decides_by_outcome_and_budget(
            id in any::<u128>(),
            attempt in 1i32..50,
            max_attempts in 1i32..50,
            outcome in outcome(),
            policy in policy(),
            seconds in 0i64..4_000_000_000,
        ) {
            let now = DateTime::from_timestamp(seconds, 0).unwrap();
            let task = AttemptInfo { task_id: Uuid::from_u128(id), attempt, max_attempts };
            let transition = after_attempt(task, &outcome, &policy, now);
            let transient = matches!(
                outcome,
                AttemptOutcome::Transient(_) | AttemptOutcome::Panicked(_) | AttemptOutcome::TimedOut(_)
            );
            match &transition {
                Transition::Complete => prop_assert_eq!(&outcome, &AttemptOutcome::Succeeded),
                Transition::HandBack => prop_assert_eq!(&outcome, &AttemptOutcome::Interrupted),
                Transition::Yield => prop_assert_eq!(&outcome, &AttemptOutcome::Yielded),
                Transition::Retry { at, .. } => {
                    // Only transient failures with attempts left come back, never early, and
                    // never later than the capped delay plus the whole jitter.
                    prop_assert!(transient && attempt < max_attempts);
                    prop_assert!(*at > now);
                    let longest = policy.max_delay + policy.max_delay.mul_f64(policy.jitter);
                    prop_assert!(*at <= now + chrono::Duration::from_std(longest).unwrap());
                }
                Transition::Fail { .. } => prop_assert!(
                    matches!(outcome, AttemptOutcome::Permanent(_))
                        || (transient && attempt >= max_attempts)
                ),
                other => prop_assert!(false, "unexpected transition {other:?}"),
            }
            // A pure function: the same input gives the same answer.
            prop_assert_eq!(after_attempt(task, &outcome, &policy, now), transition);
        }

        #[test]
        fn backoff_never_shrinks_without_jitter(id in any::<u128>(), attempt in 1i32..60, policy in policy()) {
            let policy = RetryPolicy { jitter: 0.0, ..policy };
            let id = Uuid::from_u128(id);
            prop_assert!(policy.backoff(id, attempt + 1) >= policy.backoff(id, attempt));
            prop_assert!(policy.backoff(id, attempt) <= policy.max_delay);
        }
    }

    #[test]
    fn every_transition_leaves_the_statuses_it_may_start_from() {
        let at = Utc::now();
        for transition in [
            Transition::Complete,
            Transition::Retry {
                at,
                error: "e".into(),
            },
            Transition::Fail { error: "e".into() },
            Transition::Error { desc: "e".into() },
            Transition::HandBack,
            Transition::Yield,
            Transition::Abandon { reason: "r".into() },
            Transition::Requeue,
        ] {
            assert!(!transition.allowed_from().contains(&transition.target()));
        }
    }
}
