//! Caseload integration tests against real databases (SQLite file and PostgreSQL).

mod email;
mod export;
mod helpers;
mod mail_relay;
mod name_ranges;
mod search;
mod seed;
mod status_change;
mod users;
mod watches;
