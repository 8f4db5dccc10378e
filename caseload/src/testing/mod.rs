//! Test support for crates that run the bulk actions (feature `testing`): an SMTP server on
//! loopback and people with predictable names and addresses.

mod people;
mod smtp;

pub use people::insert_people;
pub use smtp::{Received, SmtpServer};
