//! The caseload domain of bulkq: the people staff advise, their program statuses, and the
//! staff users who sign in and act on them.
//!
//! # Layout
//! - [`entity`]: SeaORM entities for the caseload tables (created by the `migration` crate).
//! - [`users`]: staff users, roles and password checks (argon2).
//! - [`search`]: the caseload search (filters, sort, server-side paging).
//! - [`seed`]: the deterministic demo/benchmark data generator.
//! - [`statuses`]: program statuses.

pub mod entity;
pub mod error;
pub mod search;
pub mod seed;
pub mod statuses;
pub mod users;

pub use error::CaseloadError;
