//! A persistent, transactional task queue on SeaORM (SQLite and PostgreSQL).
//!
//! # Layout
//! - [`database`]: opening a connection with the settings the queue relies on.
//! - `testing` (feature `testing`): throwaway databases and the both-backends test macro.

pub mod database;

#[cfg(feature = "testing")]
pub mod testing;
