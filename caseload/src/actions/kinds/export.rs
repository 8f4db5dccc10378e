//! `caseload.export`: the target's rows written to a CSV file, one batch at a time, the
//! file's length stored with each batch's checkpoint so a resumed attempt cuts off whatever
//! a dead one wrote after it (see [`crate::export`]); an attempt that ends in error or is
//! cancelled cuts it back itself.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use bulkq_types::actions::ActionKind;
use bulkq_types::export::{ALL_COLUMNS, ExportColumn};
use bulkq_types::outcomes::PersonOutcome;
use bulkq_types::requests::{ExportRequest, ScheduleRequest};
use queue::{TaskContext, TaskError, TaskExecutor};
use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};

use super::{BulkAction, NodeLimits};
use crate::access::{Targets, load_targets};
use crate::actions::pace::SharedPace;
use crate::actions::spec::{RequestChecks, SubmitError, everyone};
use crate::actions::summary::StatusNames;
use crate::actions::target::Target;
use crate::actions::walk::{BatchAction, Progress, Reach, Step, Walk, read_spec, task_error};
use crate::actions::{ActionsConfig, export_file};
use crate::export::{CsvExport, DEFAULT_ROW_CAP, ExportOptions, ExportProgress};
use crate::outcomes;
use crate::store::entity::person;
use crate::users::StaffUser;

pub(crate) struct Export;

/// What a `caseload.export` task does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportSpec {
    pub target: Target,
    pub columns: Vec<ExportColumn>,
    pub row_cap: u64,
}

impl BulkAction for Export {
    const KIND: ActionKind = ActionKind::Export;
    type Request = ExportRequest;
    type Spec = ExportSpec;

    /// Columns default to all of them, the row cap to the node's (and never above it).
    async fn check<C: ConnectionTrait>(
        _db: &C,
        user: &StaffUser,
        request: ExportRequest,
        limits: &NodeLimits,
    ) -> Result<(ExportSpec, ScheduleRequest), SubmitError> {
        let max_row_cap = limits.export_row_cap;
        let mut checks = RequestChecks::new(&request.unknown, user);
        let schedule = checks.schedule(request.schedule);
        let target = checks.target(request.target, everyone());
        let options = ExportOptions {
            columns: request.columns.unwrap_or_else(|| ALL_COLUMNS.to_vec()),
            row_cap: request.row_cap.unwrap_or(max_row_cap.min(DEFAULT_ROW_CAP)),
        };
        checks.add(options.problems());
        if options.row_cap > max_row_cap {
            let problem = format!("at most {max_row_cap} rows per export");
            checks.add([("row_cap", problem)]);
        }
        let spec = ExportSpec {
            target: checks.finish(target)?,
            columns: options.columns,
            row_cap: options.row_cap,
        };
        Ok((spec, schedule))
    }

    fn target(spec: &ExportSpec) -> &Target {
        &spec.target
    }

    fn summary(spec: &ExportSpec, people: &str, _: &StatusNames) -> String {
        format!(
            "Export {people} to CSV ({})",
            describe_columns(&spec.columns)
        )
    }

    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static {
        ExportExecutor {
            exports_dir: config.exports_dir.clone(),
            pace: pace(config.batch_size),
        }
    }
}

/// "all columns", or their labels in order.
fn describe_columns(columns: &[ExportColumn]) -> String {
    if ALL_COLUMNS.iter().all(|column| columns.contains(column)) {
        return "all columns".to_owned();
    }
    let labels: Vec<&str> = columns.iter().map(|column| column.label()).collect();
    labels.join(", ")
}

pub(crate) struct ExportExecutor {
    pub exports_dir: PathBuf,
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for ExportExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: ExportSpec = read_spec(ctx)?;
        let mut walk: Walk<Option<ExportProgress>> =
            Walk::resume(ctx, spec.target, Reach::RunAsScope, self.pace.clone())?;
        if walk.progress.finished {
            return Ok(());
        }
        let path = export_file(&self.exports_dir, ctx.task_id());
        if walk.progress.extra.is_some() && !path.exists() {
            // Resumed on a node that does not have the file (exports are node-local): start
            // over rather than leave a hole.
            tracing::warn!(task_id = %ctx.task_id(), path = %path.display(),
                "export file missing on resume; starting the export again");
            walk.progress = Progress::default();
        }
        let options = ExportOptions {
            columns: spec.columns,
            row_cap: spec.row_cap,
        };
        let resume = walk.progress.extra;
        // File writes are small (one batch) and synchronous, like the database driver's own
        // SQLite I/O; each batch ends with one fsync.
        let mut file = CsvExport::open(&path, options, resume).map_err(task_error)?;
        let committed = match resume {
            Some(progress) => progress,
            // The header is on disk before any batch is committed.
            None => file.checkpoint().map_err(task_error)?,
        };
        let mut writer = FileWriter {
            file: Mutex::new(file),
            committed: Mutex::new(committed),
            succeeded: false,
        };
        let outcome = walk.run(ctx, &writer).await;
        writer.succeeded = outcome.is_ok();
        outcome
    }
}

/// Writes each batch's people to the export file, in batch order, before the batch commits.
struct FileWriter {
    /// Written by one batch's record at a time; the lock only satisfies `&self`.
    file: Mutex<CsvExport>,
    /// How far the file was when the last batch committed.
    committed: Mutex<ExportProgress>,
    /// The walk ended well; otherwise (an error, a cancellation, or the attempt aborted
    /// after its cancel grace, which drops this mid-batch) the file is cut back on drop.
    succeeded: bool,
}

impl Drop for FileWriter {
    /// Leaves exactly the committed batches' rows in the file, as a resumed attempt would.
    fn drop(&mut self) {
        if self.succeeded {
            return;
        }
        let committed = *self
            .committed
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let file = self.file.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = file.cut_back(committed) {
            tracing::warn!(%error, "could not cut an unfinished export file back to its checkpoint");
        }
    }
}

#[async_trait::async_trait]
impl BatchAction<Option<ExportProgress>> for FileWriter {
    /// For a list of ids, the people loaded and who was skipped; a query's batch comes with
    /// its rows.
    type Done = Option<(Targets, Vec<person::Model>)>;
    /// Never: a batch's rows are in the file before it commits, and the file cannot rewind
    /// to the last checkpoint within an attempt, as two overlapping batches may need to.
    const OVERLAPS: bool = false;

    async fn work(&self, step: &Step) -> Result<Self::Done, TaskError> {
        if step.batch.rows.is_some() {
            return Ok(None);
        }
        let (targets, rows) = load_targets(&*step.txn, &step.actor, &step.batch.ids)
            .await
            .map_err(task_error)?;
        // The file lists who was exported; the outcomes say who was not, and why.
        for (outcome, people) in [
            (PersonOutcome::OutOfScope, &targets.forbidden),
            (PersonOutcome::Unknown, &targets.unknown),
        ] {
            outcomes::record(&*step.txn, step.task_id, outcome, people)
                .await
                .map_err(task_error)?;
        }
        Ok(Some((targets, rows)))
    }

    fn record(
        &self,
        step: &Step,
        done: &Self::Done,
        progress: &mut Progress<Option<ExportProgress>>,
    ) -> Result<(), TaskError> {
        let rows = match done {
            Some((targets, rows)) => {
                progress
                    .report
                    .add_skipped(&targets.forbidden, &targets.unknown);
                rows.as_slice()
            }
            None => step.batch.rows.as_deref().unwrap_or_default(),
        };
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        progress.report.changed += file.write_people(rows).map_err(task_error)?;
        progress.extra = Some(file.checkpoint().map_err(task_error)?);
        if file.is_full() {
            progress.finished = true;
        }
        Ok(())
    }

    /// Remembers how far the file is now that its batch is committed.
    async fn after_commit(
        &self,
        _ctx: &mut TaskContext,
        walk: &mut Walk<Option<ExportProgress>>,
        _done: Self::Done,
    ) -> Result<(), TaskError> {
        if let Some(progress) = walk.progress.extra {
            *self
                .committed
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = progress;
        }
        Ok(())
    }
}
