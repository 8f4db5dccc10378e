//! The columns a CSV export may have (one list for the request, the form and the file), and
//! who may download an export's file when (one rule for every page, list and endpoint).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::state::TaskStatus;

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

/// What one person may do with an export task's file now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ExportFileState {
    /// The export has not completed.
    NotFinished,
    /// Someone else's export: only the person who asked for it may download it (admins
    /// repair tasks; they do not read their data).
    NotYours,
    /// Its file passed its retention at `at`: deleted, or about to be.
    Expired { at: DateTime<Utc> },
    /// Downloadable until `until`.
    Ready { until: DateTime<Utc> },
}

/// An export task, as far as [`ExportFileState::of`] needs it.
#[derive(Debug, Clone, Copy)]
pub struct ExportTask {
    pub owner_id: Uuid,
    pub status: TaskStatus,
    pub stopped: Option<DateTime<Utc>>,
}

impl ExportFileState {
    /// The state of `export`'s file for `viewer` at `now`, files being kept `retention`
    /// after their task stopped.
    pub fn of(
        export: ExportTask,
        viewer: Uuid,
        retention: std::time::Duration,
        now: DateTime<Utc>,
    ) -> Self {
        if export.owner_id != viewer {
            return Self::NotYours;
        }
        match (export.status, export.stopped) {
            (TaskStatus::Completed, Some(stopped)) => {
                let at = expires_at(stopped, retention);
                match at <= now {
                    true => Self::Expired { at },
                    false => Self::Ready { until: at },
                }
            }
            _ => Self::NotFinished,
        }
    }
}

/// When a file made by a task that stopped at `stopped` expires.
pub fn expires_at(stopped: DateTime<Utc>, retention: std::time::Duration) -> DateTime<Utc> {
    let retention = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
    stopped
        .checked_add_signed(retention)
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
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

    const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

    #[test]
    fn only_the_owner_downloads_a_completed_export_until_it_expires() {
        let owner = Uuid::from_u128(1);
        let stopped = Utc::now();
        let export = |status| ExportTask {
            owner_id: owner,
            status,
            stopped: Some(stopped),
        };
        let at = |days: i64| stopped + chrono::Duration::days(days);
        let completed = export(TaskStatus::Completed);
        assert_eq!(
            ExportFileState::of(completed, owner, DAY, at(0)),
            ExportFileState::Ready { until: at(1) }
        );
        assert_eq!(
            ExportFileState::of(completed, owner, DAY, at(1)),
            ExportFileState::Expired { at: at(1) }
        );
        assert_eq!(
            ExportFileState::of(completed, Uuid::from_u128(2), DAY, at(0)),
            ExportFileState::NotYours
        );
        for status in [TaskStatus::Executing, TaskStatus::Failure] {
            assert_eq!(
                ExportFileState::of(export(status), owner, DAY, at(0)),
                ExportFileState::NotFinished
            );
        }
    }
}
