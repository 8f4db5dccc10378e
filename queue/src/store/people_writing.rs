//! When a person last wrote through a store (a sign-in, a submission, an admin's repair), so
//! background work can keep its transactions short while people are about (ADR 0033).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The moment of the last person's write.
#[derive(Debug, Default)]
pub(crate) struct PeopleWriting {
    last: Mutex<Option<Instant>>,
}

impl PeopleWriting {
    /// Notes a person's write, now.
    pub(crate) fn record(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Whether a person wrote within `window`.
    pub(crate) fn within(&self, window: Duration) -> bool {
        self.last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_whether_a_person_wrote_lately() {
        let people = PeopleWriting::default();
        assert!(!people.within(Duration::from_secs(60)));
        people.record();
        assert!(people.within(Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(20));
        assert!(!people.within(Duration::from_millis(10)));
    }
}
