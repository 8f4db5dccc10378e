//! Caseload integration tests against real databases (SQLite file and PostgreSQL).

mod search;
mod seed;
mod users;
