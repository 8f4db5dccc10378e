//! SeaORM entities for the caseload tables.

pub mod person;
pub mod program_status;
pub mod staff_user;
