//! SeaORM entities for the caseload tables.

pub mod api_token;
pub mod coach_change;
pub mod email_send_log;
pub mod person;
pub mod person_watch;
pub mod program_status;
pub mod program_status_change;
pub mod staff_user;
