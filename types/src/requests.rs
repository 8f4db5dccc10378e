//! The bulk actions as the JSON API and the dashboard request them. Validation happens on
//! the server (`caseload::actions::spec`), which reports every bad field at once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::export::ExportColumn;
use crate::filter::PersonFilter;

/// Field name → what is wrong with it, for every bad field of a request.
pub type FieldErrors = Vec<(String, String)>;

/// The fields of a JSON request that its type does not define, collected instead of ignored
/// so that a misspelt field (`"idz"`) is refused with its name rather than silently dropped.
pub type UnknownFields = std::collections::BTreeMap<String, serde_json::Value>;

/// Who a request targets: exactly one of `ids`, `query` or `"all": true`.
///
/// Nothing is implied: a request that names no target, or misspells it, is refused rather
/// than read as "everyone".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TargetRequest {
    #[serde(default)]
    pub ids: Option<Vec<Uuid>>,
    #[serde(default)]
    pub query: Option<PersonFilter>,
    /// `true`: everyone the action may reach (see each action's request).
    #[serde(default)]
    pub all: Option<bool>,
}

/// When a task may run and how it ranks against other waiting work; part of every bulk
/// request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScheduleRequest {
    /// Not before this time (RFC 3339; any offset, stored in UTC); at once when absent or
    /// past. At most a year ahead or behind.
    #[serde(default)]
    pub run_at: Option<DateTime<Utc>>,
    /// Higher runs first among waiting tasks, from -100 to 100; 0 when absent.
    #[serde(default)]
    pub priority: Option<i32>,
}

/// The furthest ahead a task may be scheduled.
pub const MAX_SCHEDULE_AHEAD_DAYS: i64 = 366;
/// The largest priority either way.
pub const MAX_PRIORITY: i32 = 100;

/// `POST /api/1/caseload/exports`. `"all": true` exports everyone the user may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    /// The columns in file order; all of them when absent.
    #[serde(default)]
    pub columns: Option<Vec<ExportColumn>>,
    /// Stop after this many rows; the server's cap when absent (and never above it).
    #[serde(default)]
    pub row_cap: Option<u64>,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}

/// `POST /api/1/caseload/program-status-changes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusChangeRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    pub to_status: String,
    pub reason: String,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}

/// `POST /api/1/caseload/watches` and `.../unwatches`. `"all": true` watches everyone the
/// user may reach; for an unwatch it clears the user's whole watch list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WatchRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}

/// `POST /api/1/caseload/emails`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmailRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    pub subject: String,
    pub body: String,
    #[serde(default)]
    pub cc: Vec<String>,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}
