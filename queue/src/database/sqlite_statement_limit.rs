//! A time limit on every statement of a SQLite pool, as PostgreSQL's `statement_timeout`.
//!
//! SQLite has no such setting, and dropping a query's future does not stop it: sqlx runs a
//! statement on the connection's own thread, which notices only when it next hands over a
//! row, so a statement that works long before its first row (a count, a sort) runs to its
//! end and holds the connection. SQLite calls a connection's progress handler every so many
//! virtual-machine steps while a statement runs; ours notes when the running statement's
//! current run was first seen and, once that is longer ago than the limit, answers "stop":
//! the statement fails with `SQLITE_INTERRUPT` (a write transaction it belonged to is
//! rolled back) and the connection serves the next one.

use std::ptr::NonNull;
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;
use sea_orm::sqlx::SqliteConnection;

/// Virtual-machine steps between two looks at the clock: a look costs a walk over the
/// connection's few prepared statements; this many steps take well under a millisecond.
/// A statement shorter than this is never looked at.
const STEPS_BETWEEN_LOOKS: i32 = 10_000;

/// Gives `connection` a progress handler that stops any statement run of longer than
/// `limit` (measured from the handler's first look at it, at most [`STEPS_BETWEEN_LOOKS`]
/// after its start).
pub(super) async fn install(
    connection: &mut SqliteConnection,
    limit: Duration,
) -> Result<(), sea_orm::sqlx::Error> {
    let mut handle = connection.lock_handle().await?;
    let database = Connection(handle.as_raw_handle());
    let mut clock = RunClock::new(limit);
    handle.set_progress_handler(STEPS_BETWEEN_LOOKS, move || {
        clock.within_limit(database.running(), Instant::now())
    });
    Ok(())
}

/// One run of one prepared statement: the statement's address and how many runs it had
/// begun (SQLite counts a run at its start), so a cached statement run again is a new run.
type Run = (usize, i32);

/// The connection a progress handler belongs to.
struct Connection(NonNull<ffi::sqlite3>);

// SAFETY: the handler holding it runs only on the connection's own thread, inside a step of
// one of the connection's statements, and sqlx removes the handler before it closes the
// connection; the pointer is never used anywhere else.
unsafe impl Send for Connection {}

impl Connection {
    /// The runs in progress on the connection: its statements that have begun a run and not
    /// been reset (sqlx resets each when its query ends or is dropped, so these are the
    /// current query's).
    fn running(&self) -> impl Iterator<Item = Run> + '_ {
        let mut statement = std::ptr::null_mut();
        std::iter::from_fn(move || {
            // SAFETY: called from the handler, on the connection's thread, while it steps
            // (see `Send` above); these calls only read the connection's statement list and
            // each statement's counters, which a progress handler may do.
            unsafe {
                loop {
                    statement = ffi::sqlite3_next_stmt(self.0.as_ptr(), statement);
                    if statement.is_null() {
                        return None;
                    }
                    if ffi::sqlite3_stmt_busy(statement) != 0 {
                        let runs =
                            ffi::sqlite3_stmt_status(statement, ffi::SQLITE_STMTSTATUS_RUN, 0);
                        return Some((statement as usize, runs));
                    }
                }
            }
        })
    }
}

/// Remembers which runs were in progress at the last look and since when.
struct RunClock {
    limit: Duration,
    runs: Vec<Run>,
    since: Instant,
    /// When the handler last looked.
    last_look: Option<Instant>,
}

impl RunClock {
    fn new(limit: Duration) -> Self {
        Self {
            limit,
            runs: Vec::new(),
            since: Instant::now(),
            last_look: None,
        }
    }

    /// Whether the runs in progress `now` may go on: no while the same runs have been in
    /// progress for longer than the limit. Other runs than at the last look start the
    /// clock again, and so does a look more than the limit after the last one: a statement
    /// that runs is looked at every few thousand steps, and a statement SQLite prepares
    /// where a finalized one was, in its first run, looks like that one's run seen long
    /// before (which stopped a new short statement at once as if it had run for minutes).
    fn within_limit(&mut self, running: impl Iterator<Item = Run>, now: Instant) -> bool {
        let resumed = self
            .last_look
            .is_some_and(|last| now.duration_since(last) > self.limit);
        self.last_look = Some(now);
        let mut same = !resumed;
        let mut count = 0;
        for run in running {
            if self.runs.get(count) != Some(&run) {
                same = false;
                self.runs.truncate(count);
                self.runs.push(run);
            }
            count += 1;
        }
        if count != self.runs.len() {
            same = false;
            self.runs.truncate(count);
        }
        if !same {
            self.since = now;
        }
        self.runs.is_empty() || now.duration_since(self.since) <= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(1);

    #[test]
    fn the_same_run_is_stopped_once_past_the_limit() {
        let start = Instant::now();
        let mut clock = RunClock::new(LIMIT);
        assert!(clock.within_limit([(1, 1)].into_iter(), start));
        assert!(clock.within_limit([(1, 1)].into_iter(), start + LIMIT));
        assert!(!clock.within_limit([(1, 1)].into_iter(), start + LIMIT * 2));
    }

    #[test]
    fn a_new_run_of_the_same_statement_starts_the_clock_again() {
        let start = Instant::now();
        let mut clock = RunClock::new(LIMIT);
        assert!(clock.within_limit([(1, 1)].into_iter(), start));
        assert!(clock.within_limit([(1, 2)].into_iter(), start + LIMIT * 2));
        assert!(clock.within_limit([(1, 2)].into_iter(), start + LIMIT * 3));
        assert!(!clock.within_limit([(1, 2)].into_iter(), start + LIMIT * 4));
    }

    #[test]
    fn a_run_seen_again_after_a_silence_longer_than_the_limit_is_a_new_one() {
        let start = Instant::now();
        let mut clock = RunClock::new(LIMIT);
        assert!(clock.within_limit([(1, 1)].into_iter(), start));
        // No look for longer than the limit: what runs now began since.
        assert!(clock.within_limit([(1, 1)].into_iter(), start + LIMIT * 5));
        assert!(clock.within_limit([(1, 1)].into_iter(), start + LIMIT * 6));
        assert!(!clock.within_limit([(1, 1)].into_iter(), start + LIMIT * 7));
    }

    #[test]
    fn a_run_that_ends_or_joins_others_starts_the_clock_again() {
        let start = Instant::now();
        let mut clock = RunClock::new(LIMIT);
        assert!(clock.within_limit([(1, 1), (2, 1)].into_iter(), start));
        assert!(clock.within_limit([(1, 1)].into_iter(), start + LIMIT * 2));
        assert!(clock.within_limit([(1, 1), (3, 1)].into_iter(), start + LIMIT * 4));
        assert!(clock.within_limit(std::iter::empty(), start + LIMIT * 9));
    }
}
