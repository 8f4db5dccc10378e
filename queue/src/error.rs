//! Errors: [`QueueError`] for callers of the queue, [`TaskError`] for executors to signal how
//! an attempt ended.

use sea_orm::DbErr;

/// What can go wrong when calling the queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// No task has this id.
    #[error("task {0} not found")]
    NotFound(uuid::Uuid),
    /// A value could not be stored or read back (e.g. a checkpoint that is not JSON).
    #[error("invalid value: {0}")]
    Invalid(String),
    /// The database refused or failed.
    #[error(transparent)]
    Db(#[from] DbErr),
}

/// How an executor says an attempt went wrong. The worker turns it into a state change with
/// [`crate::state::after_attempt`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// Might work later (a timeout, a locked row, a remote service down): retried with backoff
    /// while attempts are left.
    #[error("transient: {0}")]
    Transient(String),
    /// Will never work (bad spec, missing target): the task fails at once.
    #[error("permanent: {0}")]
    Permanent(String),
    /// The task's cancellation token fired (shutdown, timeout, an admin abandoned it, or the
    /// claim was lost) and the executor stopped. Returned by [`crate::TaskContext::batch`];
    /// executors pass it on with `?`. The worker knows why the token fired and acts on that.
    #[error("cancelled")]
    Cancelled,
}

impl TaskError {
    /// A transient error from anything printable.
    pub fn transient(error: impl std::fmt::Display) -> Self {
        Self::Transient(error.to_string())
    }

    /// A permanent error from anything printable.
    pub fn permanent(error: impl std::fmt::Display) -> Self {
        Self::Permanent(error.to_string())
    }
}

/// Database errors inside an executor are usually passing trouble (a lost connection, a
/// lock timeout), so `?` on a `DbErr` makes the attempt transient.
impl From<DbErr> for TaskError {
    fn from(error: DbErr) -> Self {
        Self::Transient(error.to_string())
    }
}
