//! People as the school's own records describe them, brought in through the JSON API (and
//! the CSV import): one record per person, keyed by `school_id`, and what bringing a batch
//! in did.

use serde::{Deserialize, Serialize};

use crate::text::{Lines, control_character_problem};

/// The most records one request may upsert.
pub const MAX_RECORDS_PER_REQUEST: usize = 5_000;
/// The longest school id (the `person.school_id` column).
pub const MAX_SCHOOL_ID_LEN: usize = 32;
/// The longest first or last name.
pub const MAX_NAME_LEN: usize = 100;
/// The longest email address (RFC 5321's path limit).
pub const MAX_EMAIL_LEN: usize = 254;
/// The status a retired person is given: gone from the school's records, history kept.
pub const RETIRED_STATUS: &str = "RETIRED";

/// One person as the school's records have them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PersonRecord {
    /// The school's identifier: who this record is about.
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
    /// Empty or absent: no address on file.
    #[serde(default)]
    pub email: Option<String>,
    /// A program status code, e.g. `ACTIVE`.
    pub program_status: String,
    /// The coach's username; empty or absent: nobody coaches them.
    #[serde(default)]
    pub coach: Option<String>,
}

/// A batch of records to bring in (`POST /api/1/people`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PeopleUpsert {
    /// 1 to 5,000 records, each school id once.
    pub people: Vec<PersonRecord>,
}

/// What bringing records in did, person by person counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SyncCounts {
    /// New people.
    pub created: u64,
    /// People whose record differed and was brought in step.
    pub changed: u64,
    /// People whose record was already the same: nothing written.
    pub unchanged: u64,
    /// People moved to `RETIRED`.
    pub retired: u64,
}

impl SyncCounts {
    /// Whether anything was written.
    pub fn wrote_anything(&self) -> bool {
        self.created + self.changed + self.retired > 0
    }

    /// "2 created, 1 changed, 0 unchanged, 0 retired".
    pub fn words(&self) -> String {
        format!(
            "{} created, {} changed, {} unchanged, {} retired",
            self.created, self.changed, self.unchanged, self.retired
        )
    }
}

/// What happened to one person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SyncOutcome {
    Created,
    Changed,
    Unchanged,
    Retired,
}

impl SyncCounts {
    /// Counts one outcome.
    pub fn add(&mut self, outcome: SyncOutcome) {
        match outcome {
            SyncOutcome::Created => self.created += 1,
            SyncOutcome::Changed => self.changed += 1,
            SyncOutcome::Unchanged => self.unchanged += 1,
            SyncOutcome::Retired => self.retired += 1,
        }
    }
}

/// Whether a cell's text would run as a formula when a spreadsheet opens it (the first
/// character `=`, `+`, `-`, `@`, a tab or a carriage return, after OWASP's CSV-injection
/// advice): such values are refused rather than stored and exported again.
pub fn looks_like_a_formula(value: &str) -> bool {
    value.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// What is wrong with one field's text, judged trimmed: empty when `required`, longer than
/// `max` characters, a formula or control characters.
fn text_problem(value: &str, max: usize, required: bool) -> Option<String> {
    let value = value.trim();
    if value.is_empty() {
        return required.then(|| "required".to_owned());
    }
    if value.chars().count() > max {
        return Some(format!("at most {max} characters"));
    }
    if looks_like_a_formula(value) {
        return Some("looks like a spreadsheet formula".to_owned());
    }
    control_character_problem(value, Lines::One)
}

/// What is wrong with a school id, if anything.
pub fn school_id_problem(school_id: &str) -> Option<String> {
    text_problem(school_id, MAX_SCHOOL_ID_LEN, true)
}

impl PersonRecord {
    /// What is wrong with the record short of the database's say (does its status exist,
    /// its coach), by field; values are judged trimmed.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let text = text_problem;
        let email = self.email.as_deref().map(str::trim).unwrap_or_default();
        let email_problem = text(email, MAX_EMAIL_LEN, false).or_else(|| {
            let shaped = email.is_empty()
                || email.split_once('@').is_some_and(|(local, domain)| {
                    !local.is_empty()
                        && domain.contains('.')
                        && !email.contains(char::is_whitespace)
                });
            (!shaped).then(|| "not an email address".to_owned())
        });
        [
            ("school_id", school_id_problem(&self.school_id)),
            ("first_name", text(&self.first_name, MAX_NAME_LEN, true)),
            ("last_name", text(&self.last_name, MAX_NAME_LEN, true)),
            ("email", email_problem),
            (
                "program_status",
                text(
                    &self.program_status,
                    crate::filter::MAX_STATUS_CODE_LEN,
                    true,
                ),
            ),
            (
                "coach",
                text(self.coach.as_deref().unwrap_or_default(), 64, false),
            ),
        ]
        .into_iter()
        .filter_map(|(field, problem)| Some((field, problem?)))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> PersonRecord {
        PersonRecord {
            school_id: "S1".into(),
            first_name: "Ada".into(),
            last_name: "Lovelace".into(),
            email: Some("ada@example.edu".into()),
            program_status: "ACTIVE".into(),
            coach: None,
        }
    }

    #[test]
    fn a_plain_record_has_no_problems() {
        assert!(record().problems().is_empty());
        let no_email = PersonRecord {
            email: Some(" ".into()),
            ..record()
        };
        assert!(no_email.problems().is_empty());
    }

    #[test]
    fn each_field_says_what_is_wrong() {
        let bad = PersonRecord {
            school_id: "x".repeat(33),
            first_name: "=HYPERLINK(\"http://evil\")".into(),
            last_name: " ".into(),
            email: Some("not mail".into()),
            program_status: "ACTIVE\u{0}".into(),
            coach: Some("@sam".into()),
        };
        let fields: Vec<&str> = bad.problems().into_iter().map(|(field, _)| field).collect();
        assert_eq!(
            fields,
            [
                "school_id",
                "first_name",
                "last_name",
                "email",
                "program_status",
                "coach"
            ]
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let json = r#"{"school_id": "1", "first_name": "a", "last_name": "b", "program_status": "ACTIVE", "nickname": "x"}"#;
        assert!(serde_json::from_str::<PersonRecord>(json).is_err());
    }
}
