//! Test support for crates that run the bulk actions (feature `testing`): SMTP servers on
//! loopback (a minimal one, and a real relay with TLS and AUTH) and people with predictable
//! names and addresses.

mod people;
mod smtp;
mod tls_relay;

pub use people::{insert_people, watch_everyone};
pub use smtp::{Received, SmtpServer};
pub use tls_relay::{RelayTls, Relayed, TlsRelay};
