//! Early alerts: what one says, the reasons it may give, and an alert as staff see it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text::{Lines, control_character_problem};

/// The longest course or term, in characters.
pub const MAX_COURSE_LEN: usize = 200;
/// The longest suggestion or comment, in characters.
pub const MAX_NOTE_LEN: usize = 4_000;
/// The most reasons one alert gives.
pub const MAX_REASONS: usize = 10;
/// The longest reason name, in characters.
pub const MAX_REASON_NAME_LEN: usize = 100;

/// What an early alert says about each person it is raised for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertContent {
    /// The course or term it concerns ("MATH 101, fall term").
    pub course: String,
    /// One or more reason codes from `GET /api/1/alert-reasons`.
    pub reasons: Vec<String>,
    /// What the coach might do.
    #[serde(default)]
    pub suggestion: String,
    #[serde(default)]
    pub comment: String,
}

impl AlertContent {
    /// Everything wrong with the content, by field, but whether its reasons exist (which
    /// only the database knows).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let course = self.course.trim().chars().count();
        if course == 0 || course > MAX_COURSE_LEN {
            problems.push((
                "course",
                format!("a course or term has 1 to {MAX_COURSE_LEN} characters"),
            ));
        } else if let Some(problem) = control_character_problem(&self.course, Lines::One) {
            problems.push(("course", problem));
        }
        if self.reasons.is_empty() || self.reasons.len() > MAX_REASONS {
            problems.push(("reasons", format!("give 1 to {MAX_REASONS} reasons")));
        } else if let Some(code) = self.reasons.iter().find(|code| !is_reason_code(code)) {
            problems.push(("reasons", format!("{code:?} is not a reason code")));
        }
        for (field, text) in [("suggestion", &self.suggestion), ("comment", &self.comment)] {
            if text.chars().count() > MAX_NOTE_LEN {
                problems.push((field, format!("at most {MAX_NOTE_LEN} characters")));
            } else if let Some(problem) = control_character_problem(text, Lines::Many) {
                problems.push((field, problem));
            }
        }
        problems
    }
}

/// Whether `code` is spelt as reason codes are: 1 to 32 capital letters, digits and `_`.
pub fn is_reason_code(code: &str) -> bool {
    (1..=32).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A reason an alert may give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertReason {
    pub code: String,
    pub name: String,
    /// Retired by an admin: no new alert may give it.
    pub retired: bool,
}

impl AlertReason {
    /// The code of a reason named `name`: its letters and digits in capitals, words joined
    /// by `_` ("Missing assignments" → `MISSING_ASSIGNMENTS`), at most 32 characters.
    pub fn code_for(name: &str) -> String {
        let words: Vec<String> = name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_ascii_uppercase)
            .collect();
        let mut code = words.join("_");
        code.truncate(32);
        code.trim_end_matches('_').to_owned()
    }
}

/// `POST /api/1/alert-reasons`: a new reason (admins).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewAlertReason {
    pub name: String,
}

/// An early alert raised for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarlyAlert {
    pub id: Uuid,
    pub person_id: Uuid,
    /// The bulk task that raised it.
    pub task_id: Uuid,
    pub course: String,
    /// Reason codes.
    pub reasons: Vec<String>,
    /// The reasons' names, in the same order.
    pub reason_names: Vec<String>,
    pub suggestion: String,
    pub comment: String,
    pub raised_at: DateTime<Utc>,
    /// When someone closed it; open until then.
    pub closed_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_codes_come_from_names() {
        assert_eq!(
            AlertReason::code_for("Missing assignments"),
            "MISSING_ASSIGNMENTS"
        );
        assert_eq!(AlertReason::code_for("  late -- work! "), "LATE_WORK");
        assert_eq!(AlertReason::code_for("ééé"), "");
        assert!(AlertReason::code_for(&"word ".repeat(20)).len() <= 32);
    }

    #[test]
    fn content_problems_name_their_fields() {
        let content = AlertContent {
            course: " ".into(),
            reasons: vec!["lower".into()],
            suggestion: "x".repeat(MAX_NOTE_LEN + 1),
            comment: "bell\u{7}".into(),
        };
        let fields: Vec<&str> = content.problems().iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["course", "reasons", "suggestion", "comment"]);
        let fine = AlertContent {
            course: "MATH 101".into(),
            reasons: vec!["LOW_GRADES".into()],
            ..AlertContent::default()
        };
        assert!(fine.problems().is_empty());
    }
}
