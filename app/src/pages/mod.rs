//! One module per route.

pub mod account;
pub mod alert_reasons;
pub mod audit;
pub mod caseload;
pub mod imports;
pub mod not_found;
pub mod queue_health;
pub mod sign_in;
pub mod task_detail;
pub mod tasks;
pub mod users;
