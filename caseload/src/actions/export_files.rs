//! The life of export files: each is `<task id>.csv` in the exports directory, downloadable
//! until its retention has passed since the task stopped, and deleted by a periodic job once
//! expired or once its task is gone (pruned), so no file of personal data outlives either.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bulkq_types::actions::ActionKind;
use bulkq_types::export::{ExportFileState, ExportTask, expires_at};
use chrono::{DateTime, Utc};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use queue::{Store, Task};
use uuid::Uuid;

/// Default `--export-retention`: a week, like finished tasks.
pub const EXPORT_RETENTION_DEFAULT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The periodic job that deletes expired export files.
pub const EXPORT_CLEANUP_JOB: &str = "caseload.export_cleanup";
/// The longest gap between two cleanups; shorter retentions are checked more often.
const CLEANUP_INTERVAL_MAX: Duration = Duration::from_secs(600);

/// The file an export task writes.
pub fn export_file(exports_dir: &Path, task_id: Uuid) -> PathBuf {
    exports_dir.join(format!("{task_id}.csv"))
}

/// What `viewer` may do with `task`'s export file at `now` ([`ExportFileState::of`]);
/// `None` for a task that is not an export.
pub fn export_file_state(
    task: &Task,
    viewer: Uuid,
    retention: Duration,
    now: DateTime<Utc>,
) -> Option<ExportFileState> {
    let export = ExportTask {
        owner_id: task.owner_id,
        status: task.workflow_status,
        stopped: task.workflow_stopped_date,
    };
    (ActionKind::of_component(&task.execution_component_name) == Some(ActionKind::Export))
        .then(|| ExportFileState::of(export, viewer, retention, now))
}

/// Whether the task's file (if it made one) has expired at `now`: it stopped longer than
/// `retention` ago. It may not be deleted yet.
fn file_expired(task: &Task, retention: Duration, now: DateTime<Utc>) -> bool {
    task.workflow_stopped_date
        .is_some_and(|stopped| expires_at(stopped, retention) <= now)
}

/// The export files on disk: how many and how many bytes (for Queue health).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportsDiskUse {
    pub files: u64,
    pub bytes: u64,
}

/// Adds up the export files in `exports_dir` (a missing directory holds none).
pub fn exports_disk_use(exports_dir: &Path) -> std::io::Result<ExportsDiskUse> {
    let mut usage = ExportsDiskUse::default();
    for (_, path) in export_files(exports_dir)? {
        if let Ok(metadata) = std::fs::metadata(&path) {
            usage.files += 1;
            usage.bytes += metadata.len();
        }
    }
    Ok(usage)
}

/// The files named like exports (`<uuid>.csv`) in `exports_dir`, with their task ids; other
/// files are not ours and are left alone.
fn export_files(exports_dir: &Path) -> std::io::Result<Vec<(Uuid, PathBuf)>> {
    let entries = match std::fs::read_dir(exports_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        let id = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".csv"))
            .and_then(|stem| Uuid::parse_str(stem).ok());
        if let Some(id) = id {
            files.push((id, path));
        }
    }
    Ok(files)
}

/// The periodic job deleting expired export files and those whose task is gone.
pub fn export_cleanup_job(exports_dir: PathBuf, retention: Duration) -> PeriodicJob {
    let interval = (retention / 4).clamp(Duration::from_secs(1), CLEANUP_INTERVAL_MAX);
    PeriodicJob::new(
        EXPORT_CLEANUP_JOB,
        Schedule::Every(interval),
        ExportCleanup {
            exports_dir,
            retention,
        },
    )
    .with_lock_at_least_half_of(interval)
}

struct ExportCleanup {
    exports_dir: PathBuf,
    retention: Duration,
}

#[async_trait::async_trait]
impl PeriodicTask for ExportCleanup {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let deleted = delete_expired(&ctx.store, &self.exports_dir, self.retention)
            .await
            .map_err(|e| e.to_string())?;
        if deleted > 0 {
            tracing::info!(deleted, "deleted expired export files");
        }
        Ok(())
    }
}

/// Deletes the export files that expired or whose task no longer exists; returns how many.
pub async fn delete_expired(
    store: &Store,
    exports_dir: &Path,
    retention: Duration,
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let now = store.clock().now();
    let mut deleted = 0;
    for (id, path) in export_files(exports_dir)? {
        let keep = match store.task_get(id).await? {
            Some(task) => !file_expired(&task, retention, now),
            None => false,
        };
        if keep {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => deleted += 1,
            // Another node of the cluster deleted it first.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(deleted)
}
