//! The caseload's one error type.

/// Why a caseload operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CaseloadError {
    /// The input was rejected; the message says why and is safe to show to the user.
    #[error("{0}")]
    Invalid(String),
    /// A username that is already taken.
    #[error("the username {0:?} is already taken")]
    UsernameTaken(String),
    /// Hashing or verifying a password failed (never because the password was wrong).
    #[error("password hashing failed: {0}")]
    PasswordHash(String),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}
