//! When a person last wrote through a store (a sign-in, an admin's repair) and when one last
//! handed it bulk work, so background work can keep its transactions short while people are
//! about (ADR 0033).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::write_gate::WriteClass;

/// The moments of the last person's write and the last submission of bulk work.
#[derive(Debug, Default)]
pub(crate) struct PeopleWriting {
    last: Mutex<Moments>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Moments {
    write: Option<Instant>,
    submission: Option<Instant>,
}

impl PeopleWriting {
    /// Notes a write of `class`, now; background work is no person's.
    pub(crate) fn record(&self, class: WriteClass) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match class {
            WriteClass::Interactive => last.write = Some(Instant::now()),
            WriteClass::Submission => last.submission = Some(Instant::now()),
            WriteClass::Background => {}
        }
    }

    /// Whether a person wrote within `window`, or submitted bulk work within
    /// `submission_window`.
    pub(crate) fn within(&self, window: Duration, submission_window: Duration) -> bool {
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.write.is_some_and(|at| at.elapsed() < window)
            || last
                .submission
                .is_some_and(|at| at.elapsed() < submission_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_whether_a_person_wrote_lately() {
        let people = PeopleWriting::default();
        let long = Duration::from_secs(60);
        assert!(!people.within(long, long));
        people.record(WriteClass::Background);
        assert!(
            !people.within(long, long),
            "the queue's own work is no person's"
        );
        people.record(WriteClass::Interactive);
        assert!(people.within(long, Duration::ZERO));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!people.within(Duration::from_millis(10), long));
    }

    #[test]
    fn a_submission_counts_for_its_own_window() {
        let people = PeopleWriting::default();
        people.record(WriteClass::Submission);
        assert!(people.within(Duration::ZERO, Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!people.within(Duration::from_secs(60), Duration::from_millis(10)));
    }
}
