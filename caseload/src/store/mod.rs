//! The only place caseload's SQL lives: the domain modules decide, and call these functions
//! for every read and write, on any connection or transaction (the queue's executors pass
//! their batch transaction).
//!
//! # Layout
//! - [`entity`]: SeaORM entities for the caseload tables (created by the `migration` crate).

pub mod entity;
