//! A CSV import of people as both sides see it: which column holds which field (guessed
//! from the header row, corrected in the preview's form), where a file's rows are, why a
//! row is not imported, and what importing a file would do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::person_records::{PersonRecord, SyncCounts};

/// The fields a file's columns can hold, with the header names each is recognised by
/// (compared lower-cased, with spaces, dashes and underscores removed).
pub const FIELDS: [(&str, &[&str]); 6] = [
    (
        "school_id",
        &["schoolid", "studentid", "id", "studentnumber"],
    ),
    (
        "first_name",
        &["firstname", "givenname", "forename", "first"],
    ),
    ("last_name", &["lastname", "surname", "familyname", "last"]),
    ("email", &["email", "emailaddress", "mail"]),
    ("program_status", &["programstatus", "status"]),
    ("coach", &["coach", "coachusername", "advisor", "adviser"]),
];

/// Fields a file must map.
pub const REQUIRED: [&str; 4] = ["school_id", "first_name", "last_name", "program_status"];

/// Column numbers (from 0) of each field; `None` for a field the file does not have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ColumnMapping {
    pub school_id: Option<usize>,
    pub first_name: Option<usize>,
    pub last_name: Option<usize>,
    pub email: Option<usize>,
    pub program_status: Option<usize>,
    pub coach: Option<usize>,
}

impl ColumnMapping {
    /// The mapping a header row suggests.
    pub fn guess(header: &[String]) -> Self {
        let normal: Vec<String> = header
            .iter()
            .map(|name| {
                name.to_lowercase()
                    .chars()
                    .filter(|c| !matches!(c, ' ' | '-' | '_'))
                    .collect()
            })
            .collect();
        let find = |field: &str| {
            let names = FIELDS.iter().find(|(name, _)| *name == field)?.1;
            normal
                .iter()
                .position(|column| names.contains(&column.as_str()))
        };
        ColumnMapping {
            school_id: find("school_id"),
            first_name: find("first_name"),
            last_name: find("last_name"),
            email: find("email"),
            program_status: find("program_status"),
            coach: find("coach"),
        }
    }

    /// The column of each field, by name.
    pub fn get(&self, field: &str) -> Option<usize> {
        match field {
            "school_id" => self.school_id,
            "first_name" => self.first_name,
            "last_name" => self.last_name,
            "email" => self.email,
            "program_status" => self.program_status,
            "coach" => self.coach,
            _ => None,
        }
    }

    /// What is wrong with the mapping for a file of `columns` columns, by field: a required
    /// field unmapped, a column out of range, or one column given two fields.
    pub fn problems(&self, columns: usize) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let mut used: Vec<(usize, &str)> = Vec::new();
        for (field, _) in FIELDS {
            match self.get(field) {
                None if REQUIRED.contains(&field) => {
                    problems.push((field, "choose the column that holds it".to_owned()));
                }
                None => {}
                Some(column) if column >= columns => {
                    problems.push((field, format!("the file has {columns} columns")));
                }
                Some(column) => {
                    if let Some((_, other)) = used.iter().find(|(c, _)| *c == column) {
                        problems.push((field, format!("column {} is {other} already", column + 1)));
                    }
                    used.push((column, field));
                }
            }
        }
        problems
    }

    /// A row's fields as a record (a missing cell is empty).
    pub fn record(&self, fields: &[String]) -> PersonRecord {
        let cell = |column: Option<usize>| {
            column
                .and_then(|column| fields.get(column))
                .cloned()
                .unwrap_or_default()
        };
        let optional = |column: Option<usize>| column.map(|_| cell(column));
        PersonRecord {
            school_id: cell(self.school_id),
            first_name: cell(self.first_name),
            last_name: cell(self.last_name),
            email: optional(self.email),
            program_status: cell(self.program_status),
            coach: optional(self.coach),
        }
    }
}

/// A place in an uploaded file: a byte offset and the line that starts there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilePosition {
    pub offset: u64,
    pub line: u64,
}

/// Why one row is not imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RowProblem {
    pub line: u64,
    pub school_id: Option<String>,
    pub message: String,
}

/// What importing a file would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportPreview {
    pub header: Vec<String>,
    pub mapping: ColumnMapping,
    /// Fields the mapping leaves unmapped or maps wrongly, by field; rows are not read
    /// until there are none.
    pub mapping_problems: BTreeMap<String, String>,
    pub first_rows: Vec<Vec<String>>,
    /// Where the first row after the header starts.
    pub first_row: FilePosition,
    /// Data rows (blank ones not counted).
    pub rows: u64,
    /// What would happen to people; `retired` only for a full sync.
    pub counts: SyncCounts,
    /// The first problems, by line.
    pub problems: Vec<RowProblem>,
    pub problem_count: u64,
}

/// What an import task has done so far, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Rows read (problems included).
    pub rows: u64,
    pub counts: SyncCounts,
    /// Rows not imported; their lines and reasons download from `problems_href`.
    pub problems: u64,
    pub problems_href: String,
}

/// Where an import's error report downloads from.
pub fn problems_href(upload_id: uuid::Uuid) -> String {
    format!("/admin/imports/{upload_id}/problems.csv")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn common_header_names_are_recognised() {
        let mapping = ColumnMapping::guess(&header(&[
            "Student ID",
            "Given name",
            "Surname",
            "E-mail",
            "Status",
            "Advisor",
        ]));
        assert_eq!(
            mapping,
            ColumnMapping {
                school_id: Some(0),
                first_name: Some(1),
                last_name: Some(2),
                email: Some(3),
                program_status: Some(4),
                coach: Some(5),
            }
        );
        assert!(mapping.problems(6).is_empty());
    }

    #[test]
    fn a_mapping_names_what_is_missing_or_doubled() {
        let mapping = ColumnMapping::guess(&header(&["school_id", "name", "program_status"]));
        let fields: Vec<&str> = mapping.problems(3).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["first_name", "last_name"]);
        let doubled = ColumnMapping {
            first_name: Some(1),
            last_name: Some(1),
            email: Some(9),
            ..mapping
        };
        let problems = doubled.problems(3);
        assert!(
            problems
                .iter()
                .any(|(f, p)| *f == "last_name" && p.contains("first_name"))
        );
        assert!(
            problems
                .iter()
                .any(|(f, p)| *f == "email" && p.contains("3 columns"))
        );
    }

    #[test]
    fn a_row_becomes_a_record() {
        let mapping = ColumnMapping {
            school_id: Some(2),
            first_name: Some(0),
            last_name: Some(1),
            program_status: Some(3),
            ..ColumnMapping::default()
        };
        let record = mapping.record(&header(&["Ada", "Lovelace", "S1"]));
        assert_eq!(record.school_id, "S1");
        assert_eq!(record.program_status, "");
        assert_eq!(record.email, None);
    }
}
