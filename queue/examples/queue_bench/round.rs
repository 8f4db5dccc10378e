//! One drain round's clock: from the enqueue's commit until no task is left.
//!
//! The enqueuing node replies once its COMMIT has returned, but the other nodes are woken by
//! the commit itself, so a task can begin before the reply arrives (`make bench-peers` found
//! graphile-worker's workers running thousands of jobs while `addJobs`, which returns every
//! job it added, was still reading them back). No task begins before its commit, so the
//! round's commit is the reply or the first task's start, whichever came first; both
//! harnesses date it so (`peers/graphile/bench.mjs` likewise).

use std::time::Duration;

use crate::work::{Cpu, CpuReadings};
use crate::worker::Enqueued;

/// What the parent noted during one round.
pub struct Marks {
    pub enqueued: Enqueued,
    /// The CPU times read while the enqueue ran.
    pub cpu: CpuReadings,
    /// Unix microseconds when no task was left, and the CPU times then.
    pub drained_at: i64,
    pub cpu_drained: Option<Cpu>,
}

/// A round's figures, once the tasks' start times are known.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timed {
    /// From the commit until no task was left.
    pub drain: Duration,
    /// From the enqueue's call until the commit.
    pub enqueue: Duration,
    /// Tasks that began before the enqueuing node replied.
    pub started_early: usize,
    /// The commit, as Unix microseconds (where the round's CPU times split).
    pub committed_at: i64,
}

impl Marks {
    /// The commit (Unix microseconds): the reply, or the first of this round's tasks to
    /// begin if it began before that; `starts` holds every round's start times.
    fn committed_at(&self, starts: &[i64]) -> i64 {
        starts
            .iter()
            .copied()
            .filter(|at| (self.enqueued.called_at..=self.drained_at).contains(at))
            .min()
            .map_or(self.enqueued.replied_at, |first| {
                first.min(self.enqueued.replied_at)
            })
    }

    pub fn timed(&self, starts: &[i64]) -> Timed {
        let committed_at = self.committed_at(starts);
        let micros = |from: i64, to: i64| Duration::from_micros((to - from).max(0).unsigned_abs());
        Timed {
            drain: micros(committed_at, self.drained_at),
            enqueue: micros(self.enqueued.called_at, committed_at),
            started_early: starts
                .iter()
                .filter(|at| (self.enqueued.called_at..self.enqueued.replied_at).contains(at))
                .count(),
            committed_at,
        }
    }
}
