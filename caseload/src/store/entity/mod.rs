//! SeaORM entities for the caseload tables.

pub mod admin_alert;
pub mod alert_reason;
pub mod api_token;
pub mod audit_event;
pub mod coach_change;
pub mod coach_notice;
pub mod early_alert;
pub mod email_send_log;
pub mod person;
pub mod person_watch;
pub mod program_status;
pub mod program_status_change;
pub mod send_rate;
pub mod staff_user;
pub mod task_notice;
