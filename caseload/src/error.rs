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
    /// A program status code that `program_status` does not list.
    #[error("unknown program status {0:?}")]
    UnknownStatus(String),
    /// A staff user id that names nobody (a task's `run_as` deleted since it was submitted).
    #[error("unknown staff user {0}")]
    UnknownUser(uuid::Uuid),
    /// The staff user a task runs as was disabled by an admin: the task may do nothing more.
    #[error("the account of {0:?} is disabled, so its tasks no longer run")]
    UserDisabled(String),
    /// The thing asked for does not exist, or the user may not see it.
    #[error("not found")]
    NotFound,
    /// Writing an export file failed.
    #[error("export file: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
    /// The queue failed to enqueue or read a task.
    #[error(transparent)]
    Queue(#[from] queue::QueueError),
}

/// The first of a list of `(field, message)` problems as an [`CaseloadError::Invalid`], for
/// the `validate` methods whose `problems` list every one.
pub(crate) fn first_problem(problems: Vec<(&'static str, String)>) -> Result<(), CaseloadError> {
    match problems.into_iter().next() {
        Some((_, message)) => Err(CaseloadError::Invalid(message)),
        None => Ok(()),
    }
}

impl From<bulkq_types::accounts::UnknownRole> for CaseloadError {
    fn from(error: bulkq_types::accounts::UnknownRole) -> Self {
        CaseloadError::Invalid(error.to_string())
    }
}
