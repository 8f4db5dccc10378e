//! The only place caseload's SQL lives: the domain modules decide, and call these functions
//! for every read and write, on any connection or transaction (the queue's executors pass
//! their batch transaction).
//!
//! # Layout
//! - [`entity`]: SeaORM entities for the caseload tables (created by the `migration` crate).
//! - `once_per_task`: the insert behind every "once per task and person" record.
//! - `people`: people by id, the run_as rule as a condition, locks and column changes.
//! - `statuses`: program statuses.
//! - `watches`: watches set and cleared.
//! - `status_changes`, `coach_changes`: the history rows of status and coach changes.
//! - `users`: staff users.

pub(crate) mod coach_changes;
pub mod entity;
pub(crate) mod once_per_task;
pub(crate) mod people;
pub(crate) mod status_changes;
pub(crate) mod statuses;
pub(crate) mod users;
pub(crate) mod watches;
