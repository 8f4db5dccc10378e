//! The columns a CSV export may have: one list for the request, the form and the file.

use serde::{Deserialize, Serialize};

/// A column an export may contain; the JSON name is also the CSV header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExportColumn {
    Id,
    SchoolId,
    FirstName,
    LastName,
    Email,
    ProgramStatus,
    CoachId,
    UpdatedAt,
}

/// All export columns, in their natural order: the default column choice.
pub const ALL_COLUMNS: [ExportColumn; 8] = [
    ExportColumn::Id,
    ExportColumn::SchoolId,
    ExportColumn::FirstName,
    ExportColumn::LastName,
    ExportColumn::Email,
    ExportColumn::ProgramStatus,
    ExportColumn::CoachId,
    ExportColumn::UpdatedAt,
];

impl ExportColumn {
    /// The header cell (and the JSON name).
    pub fn header(self) -> &'static str {
        match self {
            ExportColumn::Id => "id",
            ExportColumn::SchoolId => "school_id",
            ExportColumn::FirstName => "first_name",
            ExportColumn::LastName => "last_name",
            ExportColumn::Email => "email",
            ExportColumn::ProgramStatus => "program_status",
            ExportColumn::CoachId => "coach_id",
            ExportColumn::UpdatedAt => "updated_at",
        }
    }

    /// What the export form calls the column.
    pub fn label(self) -> &'static str {
        match self {
            ExportColumn::Id => "Id",
            ExportColumn::SchoolId => "School id",
            ExportColumn::FirstName => "First name",
            ExportColumn::LastName => "Last name",
            ExportColumn::Email => "Email",
            ExportColumn::ProgramStatus => "Program status",
            ExportColumn::CoachId => "Coach id",
            ExportColumn::UpdatedAt => "Last updated",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_json_name() {
        for column in ALL_COLUMNS {
            let json = serde_json::to_value(column).unwrap();
            assert_eq!(json, column.header());
        }
    }
}
