//! What a bulk task did to each person it targeted: one [`PersonOutcome`] per person and
//! task, kept beside the task so its owner can ask "who was not changed, and why?" and
//! anyone can ask "which tasks touched this person?".

use serde::{Deserialize, Serialize};

use crate::actions::ActionKind;

/// One person's outcome in one bulk task. Each is one of the counts of the task's
/// [`crate::actions::ActionReport`], person by person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersonOutcome {
    /// The action did what it does (status changed, watched, message sent, moved, …).
    Changed,
    /// Already as the action would leave them.
    Unchanged,
    /// Outside the owner's people: not acted on.
    OutOfScope,
    /// The id named nobody (never existed, or gone since the task was submitted).
    Unknown,
    /// Email: the person has no address.
    NoEmailAddress,
    /// Email: the relay said "later"; the task tries again.
    Deferred,
    /// Email: refused by the relay, or interrupted mid-send and deliberately not repeated.
    Failed,
}

impl PersonOutcome {
    pub const ALL: [PersonOutcome; 7] = [
        PersonOutcome::Changed,
        PersonOutcome::Unchanged,
        PersonOutcome::OutOfScope,
        PersonOutcome::Unknown,
        PersonOutcome::NoEmailAddress,
        PersonOutcome::Deferred,
        PersonOutcome::Failed,
    ];

    /// The number the database keeps (a small integer: a million rows a task add up).
    pub const fn code(self) -> i16 {
        match self {
            PersonOutcome::Changed => 1,
            PersonOutcome::Unchanged => 2,
            PersonOutcome::OutOfScope => 3,
            PersonOutcome::Unknown => 4,
            PersonOutcome::NoEmailAddress => 5,
            PersonOutcome::Deferred => 6,
            PersonOutcome::Failed => 7,
        }
    }

    /// The outcome a stored code stands for; `None` for a code no version wrote.
    pub fn from_code(code: i16) -> Option<Self> {
        Self::ALL.into_iter().find(|outcome| outcome.code() == code)
    }

    /// The outcome's name in a CSV file and the API.
    pub const fn as_str(self) -> &'static str {
        match self {
            PersonOutcome::Changed => "changed",
            PersonOutcome::Unchanged => "unchanged",
            PersonOutcome::OutOfScope => "out_of_scope",
            PersonOutcome::Unknown => "unknown",
            PersonOutcome::NoEmailAddress => "no_email_address",
            PersonOutcome::Deferred => "deferred",
            PersonOutcome::Failed => "failed",
        }
    }

    /// The outcome in the words the task page uses for `kind`'s report.
    pub const fn meaning(self, kind: ActionKind) -> &'static str {
        let words = kind.report_words();
        match self {
            PersonOutcome::Changed => words.changed,
            PersonOutcome::Unchanged => match words.unchanged {
                Some(unchanged) => unchanged,
                None => "Unchanged",
            },
            PersonOutcome::OutOfScope => "Not yours to act on",
            PersonOutcome::Unknown => "No such person",
            PersonOutcome::NoEmailAddress => "No email address",
            PersonOutcome::Deferred => "Waiting to be tried again",
            PersonOutcome::Failed => "Could not be sent",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_code_and_name() {
        for outcome in PersonOutcome::ALL {
            assert_eq!(PersonOutcome::from_code(outcome.code()), Some(outcome));
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
        }
        assert_eq!(PersonOutcome::from_code(0), None);
        assert_eq!(
            PersonOutcome::Changed.meaning(ActionKind::ProgramStatusChange),
            "Status changed"
        );
        assert_eq!(
            PersonOutcome::Unchanged.meaning(ActionKind::EarlyAlert),
            "Unchanged"
        );
    }
}
