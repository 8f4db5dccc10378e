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
/// lock timeout), so `?` on a `DbErr` makes the attempt transient; but an error about the
/// statement itself (see [`is_permanent`]) would only come back on every retry, so it fails
/// the task at once.
impl From<DbErr> for TaskError {
    fn from(error: DbErr) -> Self {
        match is_permanent(&error) {
            true => Self::Permanent(error.to_string()),
            false => Self::Transient(error.to_string()),
        }
    }
}

/// Whether the database refused the statement for what it is, not for the moment it came
/// at: a value it cannot hold (a NUL byte, out of range), a broken constraint, or a
/// statement beyond its limits (too complex, too many terms). Running it again changes
/// nothing. Everything else (connections, locks, deadlocks, a full disk) may pass.
pub fn is_permanent(error: &DbErr) -> bool {
    let (DbErr::Exec(runtime) | DbErr::Query(runtime)) = error else {
        return false;
    };
    let sea_orm::RuntimeErr::SqlxError(error) = runtime else {
        return false;
    };
    match error.as_ref() {
        sea_orm::sqlx::Error::Encode(_) => true,
        sea_orm::sqlx::Error::Database(database) => {
            let code = database.code().unwrap_or_default();
            match code.parse::<i32>() {
                // SQLite: an extended result code, whose low byte is the primary code.
                Ok(extended) => sqlite_code_is_permanent(extended & 0xff, database.message()),
                // PostgreSQL: a SQLSTATE, whose first two characters are its class.
                Err(_) => POSTGRES_PERMANENT_CLASSES
                    .iter()
                    .any(|c| code.starts_with(c)),
            }
        }
        _ => false,
    }
}

/// SQLSTATE classes of statements that cannot succeed as written: data exceptions (22,
/// e.g. a NUL in text), integrity constraint violations (23), syntax or access rule
/// violations (42), and program limits such as "statement too complex" (54).
const POSTGRES_PERMANENT_CLASSES: [&str; 4] = ["22", "23", "42", "54"];

/// SQLite's primary result codes of statements that cannot succeed as written: a value too
/// big (18), a constraint (19), a type mismatch (20), a parameter out of range (25), and the
/// generic error (1) when it reports a limit ("too many terms", "Expression tree is too
/// large", "LIKE or GLOB pattern too complex", "parser stack overflow").
fn sqlite_code_is_permanent(primary: i32, message: &str) -> bool {
    match primary {
        18 | 19 | 20 | 25 => true,
        1 => {
            let message = message.to_lowercase();
            message.contains("too ") || message.contains("stack overflow")
        }
        _ => false,
    }
}
