//! How long this node's tasks have been taking, so the producer holds (prefetches) only as
//! many claimed tasks as its slots should start within [`HOLD_HORIZON`].
//!
//! Holding pays off for many short tasks: claims (each a commit) come fewer and larger. It
//! hurts long ones: a held bulk action would wait minutes for a slot of this node while
//! another node idles. The recent pace tells the two apart, so one default serves both. No
//! task is held before this node has finished a task, and none while its tasks take longer
//! than the horizon.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A held task should start within about this long, at the recent pace: no more than the
/// time a claim takes anyway, so holding never delays a task noticeably. (A node claiming
/// ahead holds a second batch behind the first: about twice this.)
const HOLD_HORIZON: Duration = Duration::from_millis(20);

/// The weight of the newest execution in the moving average: 1/8, so a change of workload
/// shows within a few dozen tasks while one outlier moves it little.
const NEWEST_WEIGHT_SHIFT: u32 = 3;

/// Nothing measured yet.
const UNKNOWN: u64 = u64::MAX;

/// The moving average of execution times on this node, shared by its workers (who record)
/// and its producer (who asks how many tasks it may hold).
#[derive(Clone)]
pub(crate) struct Pace {
    mean_micros: Arc<AtomicU64>,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            mean_micros: Arc::new(AtomicU64::new(UNKNOWN)),
        }
    }
}

impl Pace {
    /// Adds one execution (how long the executor ran) to the average.
    pub fn record(&self, took: Duration) {
        let took = u64::try_from(took.as_micros()).unwrap_or(UNKNOWN - 1);
        // Workers record concurrently; a lost update would only drop one sample, but
        // `fetch_update` keeps them all at no real cost.
        let _ = self
            .mean_micros
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |mean| {
                Some(match mean {
                    UNKNOWN => took,
                    mean if took >= mean => mean + ((took - mean) >> NEWEST_WEIGHT_SHIFT),
                    mean => mean - ((mean - took) >> NEWEST_WEIGHT_SHIFT),
                })
            });
    }

    /// How many claimed tasks beyond its free slots a node of `workers` slots may hold: what
    /// its slots finish within [`HOLD_HORIZON`] at the recent pace, at most `limit`.
    pub fn holdable(&self, workers: usize, limit: usize) -> usize {
        let mean = self.mean_micros.load(Ordering::Relaxed);
        if mean == UNKNOWN || limit == 0 {
            return 0;
        }
        let horizon = u64::try_from(HOLD_HORIZON.as_micros()).unwrap_or(u64::MAX);
        let per_slot = horizon / mean.max(1);
        let per_slot = usize::try_from(per_slot).unwrap_or(usize::MAX);
        workers.saturating_mul(per_slot).min(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(executions: &[Duration]) -> Pace {
        let pace = Pace::default();
        for took in executions {
            pace.record(*took);
        }
        pace
    }

    #[test]
    fn nothing_is_held_before_a_task_has_finished() {
        assert_eq!(Pace::default().holdable(16, 64), 0);
    }

    #[test]
    fn short_tasks_are_held_up_to_the_limit() {
        let pace = after(&[Duration::from_micros(50); 10]);
        assert_eq!(pace.holdable(16, 64), 64);
        assert_eq!(pace.holdable(16, 0), 0, "a limit of 0 turns holding off");
    }

    #[test]
    fn slots_hold_what_they_finish_within_the_horizon() {
        // 5 ms tasks: each slot finishes 4 within 20 ms.
        let pace = after(&[Duration::from_millis(5)]);
        assert_eq!(pace.holdable(2, 64), 8);
    }

    #[test]
    fn long_tasks_are_never_held() {
        let pace = after(&[Duration::from_secs(3), Duration::from_secs(1)]);
        assert_eq!(pace.holdable(16, 64), 0);
    }

    #[test]
    fn the_average_follows_a_change_of_workload() {
        let pace = after(&[Duration::from_micros(100); 20]);
        assert_eq!(pace.holdable(16, 64), 64);
        for _ in 0..40 {
            pace.record(Duration::from_secs(2));
        }
        assert_eq!(pace.holdable(16, 64), 0, "bulk actions now: stop holding");
    }
}
