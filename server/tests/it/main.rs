//! The server's HTTP surface, driven in-process through the axum `Router` against real
//! databases on both backends.

mod accounts;
mod admin_alerts;
mod audit;
mod backup;
mod bell;
mod bulk_actions;
mod bulk_dashboard;
mod cancel;
mod caseload_search;
mod cluster;
mod coach_reassignment;
mod connections;
mod crash_resume;
mod early_alerts;
mod export_retention;
mod helpers;
mod hostile;
mod idempotency;
mod logs;
mod mail_relay;
mod metrics;
mod nodes;
mod overlapping_actions;
mod people;
mod people_first;
mod people_import;
mod queue_health;
mod rendering;
mod reschedule;
mod rolling_restart;
mod sign_in;
mod stopping;
mod task_notices;
mod task_search;
mod tasks_api;
