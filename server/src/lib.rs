//! The bulkq server: wires the dashboard, the JSON API and the queue runtime together.
//! The logic lives in the `app`, `caseload` and `queue` crates; this crate only assembles them,
//! so tests can reach everything without starting a process.
//!
//! # Layout
//! - [`config`]: flags and environment (clap); [`config_file`]: the same from a TOML file;
//!   [`database_target`]: the database they name, opened and migrated.
//! - [`api`]: the versioned JSON API (`/api/1`).
//! - [`commands`]: what each subcommand does; [`user_commands`]: `bulkq user ...`;
//!   [`import_command`]: `bulkq import people`; [`imports`]: the same file's upload and error
//!   report on the dashboard; [`audit_csv`]: the audit trail's download; [`backup`]:
//!   `bulkq backup`.
//! - [`http_server`]: the listener, its connection limits and its drain.
//! - [`web`]: the router (sessions in the database through
//!   `app::api::session_store`); [`auth_gate`]: the sign-in gate; [`csrf`]: cross-site
//!   checks; [`site`]: finding the built site; [`csv_download`]: a CSV answer's headers.
//! - The router's guards: [`security_headers`] on every answer, [`failsafe`] for panics and
//!   slow requests, [`client_address`] for the sign-in limits.
//! - [`draining`]: a node's orderly stop, as its streams, readiness and queue see it.
//! - [`demo`]: the demo users and caseload.
//! - [`metrics`]: `/metrics` in the Prometheus format; [`http_metrics`]: HTTP answers in it.
//! - [`memory`]: large blocks given back to the system when freed.
//! - [`queue_threads`]: the queue's own threads, at a lower CPU priority than people's.

pub mod api;
pub mod audit_csv;
pub mod auth_gate;
pub mod backup;
pub mod client_address;
pub mod commands;
pub mod config;
pub mod config_file;
pub mod csrf;
pub mod csv_download;
pub mod database_target;
pub mod demo;
pub mod draining;
pub mod failsafe;
pub mod http_metrics;
pub mod http_server;
pub mod import_command;
pub mod imports;
pub mod memory;
pub mod metrics;
pub mod queue_threads;
pub mod security_headers;
pub mod session_renewal;
pub mod site;
pub mod smtp_settings;
pub mod user_commands;
pub mod web;
