//! Batch sizes by elapsed time: while people are writing, a bulk action's batch holds its
//! transaction (on SQLite, the one write lock every person's sign-in and submission waits
//! for) for about a target time ([`batch_time_default`]), whatever a row costs; otherwise
//! it takes as many rows as configured, which is faster in all (ADR 0033).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sea_orm::DbBackend;

/// How long one batch should hold its transaction while people write, unless configured
/// ([`batch_time_default`]).
///
/// SQLite: a person's sign-in or submission waits for the batch holding the one write
/// lock, so batches are short enough that the wait stays within a page's budget, at some
/// cost in batches' commits (ADR 0033).
pub const SQLITE_BATCH_TIME_DEFAULT: Duration = Duration::from_millis(25);

/// PostgreSQL: a batch holds no lock a person needs; its length only spaces out the
/// commits, and shorter batches made the bulk work markedly slower (ADR 0033).
pub const POSTGRES_BATCH_TIME_DEFAULT: Duration = Duration::from_millis(100);

/// The batch time while people write, on `backend`.
pub fn batch_time_default(backend: DbBackend) -> Duration {
    match backend {
        DbBackend::Sqlite => SQLITE_BATCH_TIME_DEFAULT,
        _ => POSTGRES_BATCH_TIME_DEFAULT,
    }
}

/// The first batch of a walk, before its cost per row is known.
const FIRST_BATCH_ROWS: u64 = 500;

/// The smallest batch: below it, a batch's fixed cost (its commit) would dominate.
const MIN_BATCH_ROWS: u64 = 20;

/// The size of a walk's next batch, learnt from how long the previous ones took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchPace {
    max_rows: u64,
    /// How long a batch should hold its transaction while people write.
    target: Duration,
    next_rows: u64,
}

impl BatchPace {
    /// A pace for batches of at most `max_rows` (at least one), each holding its
    /// transaction for about `target` while people write.
    pub fn new(max_rows: u64, target: Duration) -> Self {
        let max_rows = max_rows.max(1);
        BatchPace {
            max_rows,
            target,
            next_rows: FIRST_BATCH_ROWS.min(max_rows),
        }
    }

    /// How many rows the next batch takes: what fits in the target while people are
    /// writing (`bounded`), else the most allowed.
    pub fn rows(&self, bounded: bool) -> u64 {
        match bounded {
            true => self.next_rows,
            false => self.max_rows,
        }
    }

    /// Learns from a batch of `rows` that held its transaction for `took`: the next batch
    /// takes as many rows as fit in the target at that cost, growing at most twofold (one
    /// lucky batch is no rate), never below the minimum nor above the maximum.
    pub fn record(&mut self, rows: u64, took: Duration) {
        if rows == 0 {
            return;
        }
        let per_row = (took.as_nanos() / u128::from(rows)).max(1);
        let fit = u64::try_from(self.target.as_nanos() / per_row).unwrap_or(u64::MAX);
        let floor = MIN_BATCH_ROWS.min(self.max_rows);
        self.next_rows = fit
            .min(self.next_rows.saturating_mul(2))
            .clamp(floor, self.max_rows);
    }
}

/// One action's pace on this node, shared by its tasks: a task of a few batches starts at
/// the size the ones before it learnt, not from scratch.
#[derive(Debug, Clone)]
pub(crate) struct SharedPace(Arc<Mutex<BatchPace>>);

impl SharedPace {
    pub fn new(max_rows: u64, target: Duration) -> Self {
        SharedPace(Arc::new(Mutex::new(BatchPace::new(max_rows, target))))
    }

    /// See [`BatchPace::rows`].
    pub fn rows(&self, bounded: bool) -> u64 {
        self.lock().rows(bounded)
    }

    /// The most rows a batch may take.
    pub fn max_rows(&self) -> u64 {
        self.lock().max_rows
    }

    /// See [`BatchPace::record`].
    pub fn record(&self, rows: u64, took: Duration) {
        self.lock().record(rows, took);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BatchPace> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_small_and_grows_at_most_twofold_to_the_maximum() {
        let mut pace = BatchPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        assert_eq!(pace.rows(true), FIRST_BATCH_ROWS);
        // Cheap rows: 1 µs each, 100,000 would fit.
        pace.record(500, Duration::from_micros(500));
        assert_eq!(pace.rows(true), 1_000);
        pace.record(1_000, Duration::from_millis(1));
        assert_eq!(pace.rows(true), 2_000);
        pace.record(2_000, Duration::from_millis(2));
        pace.record(4_000, Duration::from_millis(4));
        assert_eq!(pace.rows(true), 5_000);
    }

    #[test]
    fn shrinks_at_once_to_what_fits_in_the_target() {
        let mut pace = BatchPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        // 1 ms a row: 100 fit in 100 ms.
        pace.record(500, Duration::from_millis(500));
        assert_eq!(pace.rows(true), 100);
        // Then rows get cheaper again.
        pace.record(100, Duration::from_millis(10));
        assert_eq!(pace.rows(true), 200);
    }

    #[test]
    fn stays_within_the_minimum_and_the_configured_maximum() {
        let mut pace = BatchPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        pace.record(500, Duration::from_secs(60));
        assert_eq!(pace.rows(true), MIN_BATCH_ROWS);
        let mut small = BatchPace::new(7, POSTGRES_BATCH_TIME_DEFAULT);
        assert_eq!(small.rows(true), 7);
        small.record(7, Duration::from_secs(60));
        assert_eq!(small.rows(true), 7);
        small.record(7, Duration::ZERO);
        assert_eq!(small.rows(true), 7);
        assert_eq!(BatchPace::new(0, POSTGRES_BATCH_TIME_DEFAULT).rows(true), 1);
    }

    #[test]
    fn tasks_sharing_a_pace_start_where_the_last_left_off() {
        let pace = SharedPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        let other_task = pace.clone();
        pace.record(500, Duration::from_millis(500));
        assert_eq!(other_task.rows(true), 100);
        assert_eq!(other_task.max_rows(), 5_000);
    }

    #[test]
    fn with_nobody_writing_a_batch_takes_the_most_allowed() {
        let mut pace = BatchPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        assert_eq!(pace.rows(false), 5_000);
        pace.record(5_000, Duration::from_secs(5));
        assert_eq!(pace.rows(false), 5_000);
        assert_eq!(pace.rows(true), 100);
    }

    #[test]
    fn an_empty_batch_teaches_nothing() {
        let mut pace = BatchPace::new(5_000, POSTGRES_BATCH_TIME_DEFAULT);
        pace.record(0, Duration::from_secs(5));
        assert_eq!(pace.rows(true), FIRST_BATCH_ROWS);
    }
}
