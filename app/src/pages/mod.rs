//! One module per route.

pub mod caseload;
pub mod not_found;
pub mod sign_in;
