//! The bulk actions as the JSON API and the dashboard request them. Validation happens on
//! the server (`caseload::actions::spec`), which reports every bad field at once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::accounts::Role;
use crate::actions::ActionKind;
use crate::alerts::AlertContent;
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
    /// Higher runs first among waiting tasks: from -10 to 10 for staff, -100 to 100 for
    /// admins; 0 when absent.
    #[serde(default)]
    pub priority: Option<i32>,
}

impl ScheduleRequest {
    /// A field error for each value out of range at `now`; `role` decides how far the
    /// priority may go. A bulk request and a waiting task's reschedule check alike.
    pub fn problems(&self, role: Role, now: DateTime<Utc>) -> FieldErrors {
        let mut errors = FieldErrors::new();
        let window = chrono::Duration::days(MAX_SCHEDULE_AHEAD_DAYS);
        if let Some(run_at) = self.run_at {
            if run_at > now + window {
                let problem = format!("at most {MAX_SCHEDULE_AHEAD_DAYS} days ahead");
                errors.push(("run_at".to_owned(), problem));
            } else if run_at < now - window {
                // Past times mean "now"; one from long ago is a mistake (and some are out
                // of the databases' range).
                let problem = format!("at most {MAX_SCHEDULE_AHEAD_DAYS} days in the past");
                errors.push(("run_at".to_owned(), problem));
            }
        }
        let (limit, whose) = match role {
            Role::Admin => (MAX_PRIORITY, ""),
            Role::Staff => (MAX_STAFF_PRIORITY, " for staff (admins may go further)"),
        };
        if let Some(priority) = self.priority
            && !(-limit..=limit).contains(&priority)
        {
            let problem = format!("from -{limit} to {limit}{whose}");
            errors.push(("priority".to_owned(), problem));
        }
        errors
    }
}

/// The furthest ahead a task may be scheduled.
pub const MAX_SCHEDULE_AHEAD_DAYS: i64 = 366;
/// The largest priority either way, for admins.
pub const MAX_PRIORITY: i32 = 100;
/// The largest priority either way for staff: what the dashboard's forms offer ("High" and
/// "Low"), so nobody outside the admins jumps the whole queue through the API.
pub const MAX_STAFF_PRIORITY: i32 = 10;

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

/// `POST /api/1/caseload/coach-reassignments`: move people to another coach. Staff may
/// move the people in their caseload (those they coach and those nobody coaches), admins
/// anyone; `"all": true` is everyone the user may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CoachReassignmentRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    /// The username of the new coach, an enabled account.
    pub to_coach: String,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}

/// `POST /api/1/caseload/early-alerts`: an early alert for each targeted person, then one
/// email to each of their coaches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarlyAlertRequest {
    #[serde(flatten)]
    pub target: TargetRequest,
    #[serde(flatten)]
    pub schedule: ScheduleRequest,
    #[serde(flatten)]
    pub alert: AlertContent,
    #[serde(flatten, skip_serializing)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub unknown: UnknownFields,
}

/// `POST /api/1/caseload/unwatches`: the same fields as a watch.
pub type UnwatchRequest = WatchRequest;

/// A request for one of the bulk actions: what each endpoint of the JSON API reads, and what
/// the dashboard sends, so both doors ask in the same words and are checked by the same
/// code (`caseload::actions::submit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionRequest {
    Export(ExportRequest),
    ProgramStatusChange(StatusChangeRequest),
    Watch(WatchRequest),
    Unwatch(UnwatchRequest),
    Email(EmailRequest),
    CoachReassignment(CoachReassignmentRequest),
    EarlyAlert(EarlyAlertRequest),
}

impl ActionRequest {
    /// The action asked for.
    pub fn kind(&self) -> ActionKind {
        match self {
            ActionRequest::Export(_) => ActionKind::Export,
            ActionRequest::ProgramStatusChange(_) => ActionKind::ProgramStatusChange,
            ActionRequest::Watch(_) => ActionKind::Watch,
            ActionRequest::Unwatch(_) => ActionKind::Unwatch,
            ActionRequest::Email(_) => ActionKind::Email,
            ActionRequest::CoachReassignment(_) => ActionKind::CoachReassignment,
            ActionRequest::EarlyAlert(_) => ActionKind::EarlyAlert,
        }
    }

    /// Who the request targets.
    pub fn target(&self) -> &TargetRequest {
        match self {
            ActionRequest::Export(request) => &request.target,
            ActionRequest::ProgramStatusChange(request) => &request.target,
            ActionRequest::Watch(request) | ActionRequest::Unwatch(request) => &request.target,
            ActionRequest::Email(request) => &request.target,
            ActionRequest::CoachReassignment(request) => &request.target,
            ActionRequest::EarlyAlert(request) => &request.target,
        }
    }

    /// The request with `target` and `schedule` in place of its own: how the dashboard
    /// puts a form's fields and a selection together.
    pub fn with(mut self, target: TargetRequest, schedule: ScheduleRequest) -> Self {
        let (own_target, own_schedule) = match &mut self {
            ActionRequest::Export(request) => (&mut request.target, &mut request.schedule),
            ActionRequest::ProgramStatusChange(request) => {
                (&mut request.target, &mut request.schedule)
            }
            ActionRequest::Watch(request) | ActionRequest::Unwatch(request) => {
                (&mut request.target, &mut request.schedule)
            }
            ActionRequest::Email(request) => (&mut request.target, &mut request.schedule),
            ActionRequest::CoachReassignment(request) => {
                (&mut request.target, &mut request.schedule)
            }
            ActionRequest::EarlyAlert(request) => (&mut request.target, &mut request.schedule),
        };
        *own_target = target;
        *own_schedule = schedule;
        self
    }

    /// When the request asks the action to run, and how urgently.
    pub fn schedule(&self) -> ScheduleRequest {
        match self {
            ActionRequest::Export(request) => request.schedule,
            ActionRequest::ProgramStatusChange(request) => request.schedule,
            ActionRequest::Watch(request) | ActionRequest::Unwatch(request) => request.schedule,
            ActionRequest::Email(request) => request.schedule,
            ActionRequest::CoachReassignment(request) => request.schedule,
            ActionRequest::EarlyAlert(request) => request.schedule,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_takes_the_selection_and_schedule_it_is_given() {
        let target = TargetRequest {
            ids: Some(vec![Uuid::from_u128(1)]),
            ..TargetRequest::default()
        };
        let schedule = ScheduleRequest {
            run_at: None,
            priority: Some(10),
        };
        let request = ActionRequest::Watch(WatchRequest::default()).with(target.clone(), schedule);
        assert_eq!(request.kind(), ActionKind::Watch);
        assert_eq!(request.target(), &target);
        assert_eq!(request.schedule(), schedule);
    }

    #[test]
    fn the_wire_form_names_the_action() {
        let request = ActionRequest::ProgramStatusChange(StatusChangeRequest {
            to_status: "INACTIVE".into(),
            reason: "moved".into(),
            ..StatusChangeRequest::default()
        });
        let json = serde_json::to_value(&request).unwrap();
        assert_eq!(json["program_status_change"]["to_status"], "INACTIVE");
        let back: ActionRequest = serde_json::from_value(json).unwrap();
        assert_eq!(back, request);
    }
}
