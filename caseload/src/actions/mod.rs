//! The four bulk actions as queue tasks: what a request may ask ([`spec`]), who it targets
//! ([`target`]), how a request reads in one line ([`summary`]), what a task reports
//! (`bulkq_types::actions::ActionReport`), and the executors that do the work in
//! checkpointed batches ([`walk`], `executors`).
//!
//! ```text
//! request ──spec::*_task (validate)──► NewTask ──enqueue in the request's transaction──► queue
//! queue ──claim──► executor: Walk::run(action) { batch ─► work ─► record ─► commit }*
//! ```
//!
//! The domain operations themselves (status change, watches, export file, email steps) live
//! in the crate's top-level modules and know nothing of the queue.

mod executors;
pub mod export_files;
pub mod idempotency;
mod pace;
pub mod spec;
pub mod submit;
pub mod summary;
pub mod target;
mod walk;

use std::path::PathBuf;
use std::time::Duration;

use bulkq_types::actions::{ActionKind, ActionReport, PEOPLE_IMPORT};
use queue::{Registry, Task};

use crate::CaseloadError;
use crate::email::Mailer;
use executors::email::{EMAIL_BATCH_MAX, EmailExecutor};
use executors::export::ExportExecutor;
use executors::people_import::PeopleImportExecutor;
use executors::status_change::StatusChangeExecutor;
use executors::watches::{UnwatchExecutor, WatchExecutor};
pub use export_files::export_file;
use pace::SharedPace;
pub use pace::{POSTGRES_BATCH_TIME_DEFAULT, SQLITE_BATCH_TIME_DEFAULT, batch_time_default};
pub use submit::submit;

/// The most people per batch (and per checkpoint) when the configuration names no other
/// number; while people are writing, batches are sized by elapsed time (`pace.rs`). Big
/// enough that the per-batch cost is small per person, small enough that a crash repeats
/// little, memory stays low and SQLite's single writer is not held for long.
///
/// Why 5,000 and not 1,000: on SQLite a batch's cost is mostly the index pages it rewrites,
/// and people moved to a new status land all over the status index, so five times as many
/// people per batch share many of those pages and a large status change runs markedly
/// faster; PostgreSQL does not mind. The cost: a batch holds SQLite's write lock longer.
/// `docs/adr/0015-bulk-batches.md` has the figures.
pub const BATCH_SIZE_DEFAULT: u64 = 5_000;

/// What the executors need from the host.
#[derive(Clone)]
pub struct ActionsConfig {
    /// Where export files are written (`<task id>.csv`); node-local.
    pub exports_dir: PathBuf,
    /// How long a finished export stays downloadable before its file is deleted.
    pub export_retention: Duration,
    pub mailer: Mailer,
    pub batch_size: u64,
    /// How long one batch should hold its transaction while people write
    /// ([`batch_time_default`] unless configured).
    pub batch_time_while_people_write: Duration,
    /// How long the email send log remembers a send.
    pub email_log_retention: Duration,
}

/// Registers the five executors (export, status change, watch, unwatch, email), the people
/// import and the cleanup jobs of export files, import uploads and the email send log,
/// creating the exports directory.
pub fn register(registry: &mut Registry, config: ActionsConfig) -> Result<(), CaseloadError> {
    std::fs::create_dir_all(&config.exports_dir)?;
    let batch_size = config.batch_size.max(1);
    let batch_time = config.batch_time_while_people_write;
    let pace = move |rows| SharedPace::new(rows, batch_time);
    registry
        .register_periodic(export_files::export_cleanup_job(
            config.exports_dir.clone(),
            config.export_retention,
        ))
        .register_periodic(crate::people_import::cleanup::upload_cleanup_job())
        .register_periodic(crate::email::log_retention::email_log_cleanup_job(
            config.email_log_retention,
        ))
        .register(
            ActionKind::Export.component(),
            ExportExecutor {
                exports_dir: config.exports_dir,
                pace: pace(batch_size),
            },
        )
        .register(
            ActionKind::ProgramStatusChange.component(),
            StatusChangeExecutor {
                pace: pace(batch_size),
            },
        )
        .register(
            ActionKind::Watch.component(),
            WatchExecutor {
                pace: pace(batch_size),
            },
        )
        .register(
            ActionKind::Unwatch.component(),
            UnwatchExecutor {
                pace: pace(batch_size),
            },
        )
        .register(
            ActionKind::Email.component(),
            EmailExecutor {
                mailer: config.mailer,
                pace: pace(batch_size.min(EMAIL_BATCH_MAX)),
            },
        )
        .register(
            PEOPLE_IMPORT,
            PeopleImportExecutor {
                pace: pace(batch_size),
            },
        );
    Ok(())
}

/// Registers the people import alone, `batch_size` rows a batch: for `bulkq import`, which
/// runs its import on a runtime of its own.
pub fn executors_for_import(registry: &mut Registry, batch_size: u64) {
    let pace = SharedPace::new(batch_size.max(1), SQLITE_BATCH_TIME_DEFAULT);
    registry.register(PEOPLE_IMPORT, PeopleImportExecutor { pace });
}

/// What a bulk-action task has done so far, for its owner; `None` for other tasks or before
/// its first batch.
pub fn task_report(task: &Task) -> Option<ActionReport> {
    ActionKind::of_component(&task.execution_component_name)?;
    let report = task.execution_state.get("report")?;
    serde_json::from_value(report.clone()).ok()
}
