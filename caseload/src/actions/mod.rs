//! The bulk actions as queue tasks. Each action is a module of `kinds` behind one trait: what
//! its request may ask and the spec its task stores, how it reads in one line, and its
//! executor. Around them: the checks every request shares ([`spec`]), who a request
//! targets ([`target`]), a task's summary ([`summary`]), submitting ([`submit`]), and the
//! walk every executor runs in checkpointed batches (`walk`).
//!
//! ```text
//! request ──kinds::task_for (check)──► NewTask ──enqueue in the request's transaction──► queue
//! queue ──claim──► executor: Walk::run(action) { batch ─► work ─► record ─► commit }*
//! ```
//!
//! The domain operations themselves (status change, watches, export file, email steps) live
//! in the crate's top-level modules and know nothing of the queue.

pub mod export_files;
pub mod idempotency;
mod kinds;
mod pace;
mod people_import_executor;
pub mod spec;
pub mod submit;
pub mod summary;
pub mod target;
mod tell_coaches;
mod walk;

use std::path::PathBuf;
use std::time::Duration;

use bulkq_types::actions::{ActionKind, ActionReport, PEOPLE_IMPORT};
use queue::{Registry, Task};

use crate::CaseloadError;
use crate::admin_alerts::AlertSettings;
use crate::admin_alerts::backlog::queue_alert_job;
use crate::admin_alerts::webhook::{WEBHOOK, WebhookExecutor};
use crate::email::Mailer;
pub use export_files::export_file;
pub use kinds::{
    CoachReassignmentSpec, EMAIL_BATCH_MAX, EMAIL_SENDS_IN_FLIGHT, EmailSpec, ExportSpec,
    NodeLimits, StatusChangeSpec, WatchSpec, task_for,
};
use kinds::{Register, for_action};
use pace::SharedPace;
pub use pace::{POSTGRES_BATCH_TIME_DEFAULT, SQLITE_BATCH_TIME_DEFAULT, batch_time_default};
use people_import_executor::PeopleImportExecutor;
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
    /// How long the audit trail keeps an entry.
    pub audit_retention: Duration,
    /// How admins are alerted of failures and a stuck queue.
    pub alerts: AlertSettings,
}

/// Registers every bulk action's executor, the people import and the cleanup jobs of export
/// files, import uploads, the email send log, the audit trail and pruned tasks' outcomes,
/// the admins' alerts and their webhook, and the job keeping SQLite's name ranges small,
/// creating the exports directory.
pub fn register(registry: &mut Registry, config: ActionsConfig) -> Result<(), CaseloadError> {
    std::fs::create_dir_all(&config.exports_dir)?;
    let batch_size = config.batch_size.max(1);
    let batch_time = config.batch_time_while_people_write;
    let pace = move |rows: u64| SharedPace::new(rows.clamp(1, batch_size), batch_time);
    registry
        .register_periodic(export_files::export_cleanup_job(
            config.exports_dir.clone(),
            config.export_retention,
        ))
        .register_periodic(crate::people_import::cleanup::upload_cleanup_job())
        .register_periodic(crate::email::log_retention::email_log_cleanup_job(
            config.email_log_retention,
        ))
        .register_periodic(crate::task_notices::task_notice_job(
            config.mailer.clone(),
            config.alerts.webhook.is_some(),
        ))
        .register_periodic(queue_alert_job(
            config.mailer.clone(),
            config.alerts.clone(),
        ))
        .register_periodic(crate::audit::audit_retention_job(config.audit_retention))
        .register_periodic(crate::outcomes::outcome_cleanup_job())
        .register_periodic(crate::name_ranges::name_range_job())
        .register(
            PEOPLE_IMPORT,
            PeopleImportExecutor {
                pace: pace(batch_size),
            },
        );
    if let Some(target) = config.alerts.webhook.clone() {
        registry.register_with(
            WEBHOOK,
            WebhookExecutor::new(target)?,
            WebhookExecutor::config(),
        );
    }
    for kind in ActionKind::ALL {
        for_action(
            kind,
            Register {
                registry,
                config: &config,
                pace: &pace,
            },
        );
    }
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
