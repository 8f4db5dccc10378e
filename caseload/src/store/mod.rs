//! The only place caseload's SQL lives: the domain modules decide, and call these functions
//! for every read and write, on any connection or transaction (the queue's executors pass
//! their batch transaction).
//!
//! # Layout
//! - [`entity`]: SeaORM entities for the caseload tables (created by the `migration` crate).
//! - `once_per_task`: the insert behind every "once per task and person" record.
//! - `people`: people by id, the run_as rule as a condition, locks and column changes, and
//!   people added in bulk.
//! - `people_sync`: people kept in step with the school's records, by school id.
//! - `statuses`: program statuses.
//! - `watches`: watches set and cleared.
//! - `status_changes`, `coach_changes`: the history rows of status and coach changes.
//! - `alerts`, `alert_reasons`: early alerts, and the reasons they may give.
//! - `sends`: what the three send logs share.
//! - `email_log`: bulk email's recipients, claimed, recorded and forgotten.
//! - `coach_notices`, `task_notices`: who has been told of a task's changes, of its end.
//! - `uploads`: the files uploaded for people imports, stored in chunks.
//! - `imports`: what an import records as it runs (school ids claimed, problems).
//! - `search`: the caseload search's counts, pages and walk steps, and the SQL they build.
//! - `users`, `tokens`: staff users, and their API tokens.

pub(crate) mod alert_reasons;
pub(crate) mod alerts;
pub(crate) mod coach_changes;
pub(crate) mod coach_notices;
pub(crate) mod email_log;
pub mod entity;
pub(crate) mod imports;
mod once_per_task;
pub(crate) mod people;
pub(crate) mod people_sync;
pub(crate) mod search;
mod sends;
pub(crate) mod status_changes;
pub(crate) mod statuses;
pub(crate) mod task_notices;
pub(crate) mod tokens;
pub(crate) mod uploads;
pub(crate) mod users;
pub(crate) mod watches;
