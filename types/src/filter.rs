//! Which people a search or a bulk action's saved query selects, and the limits every such
//! filter obeys whichever door it comes through.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::text::{Lines, control_character_problem};

/// The shortest text a "contains" search accepts: PostgreSQL's trigram index needs three
/// characters to narrow anything down, and shorter text matches much of the caseload anyway.
pub const MIN_CONTAINS_LEN: usize = 3;

/// The longest name search accepted, in characters.
pub const MAX_NAME_LEN: usize = 200;

/// The most different words a name search may have; nobody's name has more.
pub const MAX_NAME_WORDS: usize = 8;

/// The longest email prefix accepted: the longest address SMTP allows (RFC 5321).
pub const MAX_EMAIL_LEN: usize = 254;

/// The longest "contains" text accepted.
pub const MAX_CONTAINS_LEN: usize = 100;

/// The longest program status code accepted (the codes are short words like `ACTIVE`).
pub const MAX_STATUS_CODE_LEN: usize = 64;

/// Which people a search (or a bulk action's saved query) selects. Empty means everyone;
/// every field given narrows the result. Missing fields in JSON mean "any", so a saved
/// `{"query": {...}}` names only the filters it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PersonFilter {
    /// Words that must each start a first name, last name or school id (case-insensitive).
    pub name: Option<String>,
    /// The start of the email address (case-insensitive).
    pub email: Option<String>,
    /// Text found anywhere in the first name, last name, school id or email address
    /// (case-insensitive; at least [`MIN_CONTAINS_LEN`] characters).
    pub contains: Option<String>,
    /// Only people in this program status (by code).
    pub program_status: Option<String>,
    /// Only people coached by this staff user ("my caseload").
    pub coach_id: Option<Uuid>,
    /// Only people this staff user watches ("watched by me").
    pub watched_by: Option<Uuid>,
    /// Only people with at least one open early alert.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub has_open_alerts: bool,
}

impl PersonFilter {
    /// Everything wrong with the filter, by field: text too long or holding control
    /// characters, a name of too many words, a "contains" text too short.
    ///
    /// The caps keep every query small whatever is sent: each name word adds a condition on
    /// three columns, and a statement of thousands of them overflowed the stack that
    /// renders it (and would exceed the databases' expression limits).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let texts = [
            ("name", &self.name, MAX_NAME_LEN),
            ("email", &self.email, MAX_EMAIL_LEN),
            ("contains", &self.contains, MAX_CONTAINS_LEN),
            ("program_status", &self.program_status, MAX_STATUS_CODE_LEN),
        ];
        let mut problems = Vec::new();
        for (field, text, max) in texts {
            let Some(text) = text.as_deref() else {
                continue;
            };
            if text.chars().count() > max {
                problems.push((field, format!("at most {max} characters")));
            } else if let Some(problem) = control_character_problem(text, Lines::One) {
                problems.push((field, problem));
            }
        }
        if problems.is_empty() && self.name_words().len() > MAX_NAME_WORDS {
            problems.push(("name", format!("at most {MAX_NAME_WORDS} different words")));
        }
        if let Some(text) = self.contains_text()
            && text.chars().count() < MIN_CONTAINS_LEN
        {
            problems.push((
                "contains",
                format!("a \"contains\" search needs at least {MIN_CONTAINS_LEN} characters"),
            ));
        }
        problems
    }

    /// The name's words in the order given, each once however it is capitalised (a repeated
    /// word narrows nothing).
    pub fn name_words(&self) -> Vec<&str> {
        let mut words: Vec<&str> = Vec::new();
        for word in self.name.iter().flat_map(|name| name.split_whitespace()) {
            if !words
                .iter()
                .any(|seen| seen.to_lowercase() == word.to_lowercase())
            {
                words.push(word);
            }
        }
        words
    }

    /// The "contains" text, trimmed, if any is given.
    pub fn contains_text(&self) -> Option<&str> {
        self.contains
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_name_words_collapse_and_long_names_are_refused() {
        let repeated = PersonFilter {
            name: Some(["a"; 12_000].join(" ") + " A ADA"),
            ..PersonFilter::default()
        };
        assert_eq!(repeated.name_words(), ["a", "ADA"]);
        assert_eq!(
            repeated.problems(),
            [("name", format!("at most {MAX_NAME_LEN} characters"))]
        );
        let twice = PersonFilter {
            name: Some("ada Ada ADA lo".into()),
            ..PersonFilter::default()
        };
        assert_eq!(twice.name_words(), ["ada", "lo"]);
        let many = PersonFilter {
            name: Some("a b c d e f g h i".into()),
            ..PersonFilter::default()
        };
        assert_eq!(
            many.problems(),
            [("name", format!("at most {MAX_NAME_WORDS} different words"))]
        );
        let long = PersonFilter {
            contains: Some("x".repeat(100_000)),
            email: Some("a\0b".into()),
            ..PersonFilter::default()
        };
        let fields: Vec<&str> = long.problems().iter().map(|(field, _)| *field).collect();
        assert_eq!(fields, ["email", "contains"]);
    }
}
