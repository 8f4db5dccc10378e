//! The caseload domain of bulkq: the people staff advise, their program statuses, and the
//! staff users who sign in and act on them.
//!
//! # Layout
//! - [`store`]: the only place caseload's SQL lives, its SeaORM entities included; the
//!   modules below decide, and read and write through it.
//! - [`users`]: staff users, roles, password checks (argon2), accounts and API tokens.
//! - [`people_sync`]: people brought in from the school's records and kept in step;
//!   [`people_import`]: the same from an uploaded CSV file, by a queue task.
//! - [`search`]: the caseload search (filters, sort, server-side paging); [`name_ranges`]:
//!   SQLite's counted name ranges, which find its deep pages of a status or a caseload.
//! - [`seed`]: the deterministic demo/benchmark data generator.
//! - [`statuses`]: program statuses.
//! - [`access`]: the run_as rule (who may act on whom).
//! - The bulk actions' domain work, one batch at a time, on any connection or transaction
//!   (the queue's executors call them inside `ctx.batch`): [`status_change`], [`watches`],
//!   [`export`], [`email`], [`coach_reassignment`], [`early_alerts`]; [`coach_notices`]
//!   tell coaches of their people once per task; [`task_notices`] tell owners when their
//!   tasks end; the [`bell`] shows them in the dashboard; [`outcomes`] keep what each
//!   task did to each person.
//! - [`audit`]: the audit trail of admins' acts and account changes; [`admin_alerts`]:
//!   admins told of failures and a stuck queue, by email and signed webhook.
//! - [`actions`]: the bulk actions as queue tasks: requests, validation, executors.

pub mod access;
pub mod actions;
pub mod admin_alerts;
pub mod audit;
pub mod bell;
pub mod coach_notices;
pub mod coach_reassignment;
pub mod early_alerts;
pub mod email;
pub mod error;
pub mod export;
pub mod name_ranges;
pub mod outcomes;
pub mod people_import;
pub mod people_sync;
pub mod search;
pub mod seed;
pub mod status_change;
pub mod statuses;
pub mod store;
pub mod task_notices;
pub mod users;

#[cfg(feature = "testing")]
pub mod testing;
pub mod watches;

pub use error::CaseloadError;

/// The most people one call of a batch operation may name: a batch's rows are held in
/// memory and its work repeats after a crash, so a checkpointed batch stays well under
/// this (5,000 by default).
pub const MAX_BATCH: usize = 10_000;
