//! Server functions, grouped by resource, and the wire types they exchange.

pub mod accounts;
pub mod admin;
pub mod alerts;
pub mod audit;
pub mod auth;
pub mod bulk;
pub mod caseload;
pub mod imports;
#[cfg(feature = "ssr")]
pub mod known_device;
#[cfg(feature = "ssr")]
pub mod login_throttle;
pub mod notices;
#[cfg(feature = "ssr")]
pub mod session_store;
#[cfg(feature = "ssr")]
pub mod ssr;
pub mod tasks;
