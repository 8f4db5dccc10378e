//! `caseload.export`: the target's rows written to a CSV file, one batch at a time, the
//! file's length stored with each batch's checkpoint so a resumed attempt cuts off whatever
//! a dead one wrote after it (see [`crate::export`]).

use std::path::PathBuf;

use queue::{TaskContext, TaskError, TaskExecutor};

use crate::access::load_targets;
use crate::actions::export_file;
use crate::actions::pace::SharedPace;
use crate::actions::spec::ExportSpec;
use crate::actions::walk::{Progress, Reach, Walk, read_spec, task_error};
use crate::export::{CsvExport, ExportOptions, ExportProgress};

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
        if resume.is_none() {
            // The header is on disk before any batch is committed.
            file.checkpoint().map_err(task_error)?;
        }
        while let Some(step) = walk.next(ctx).await? {
            let rows = match step.batch.rows {
                Some(rows) => rows,
                None => {
                    let (targets, rows) = load_targets(&*step.txn, &step.actor, &step.batch.ids)
                        .await
                        .map_err(task_error)?;
                    walk.progress
                        .report
                        .add_skipped(&targets.forbidden, &targets.unknown);
                    rows
                }
            };
            walk.progress.report.changed += file.write_people(&rows).map_err(task_error)?;
            walk.progress.extra = Some(file.checkpoint().map_err(task_error)?);
            if file.is_full() {
                walk.finish();
            }
            walk.commit(ctx, step.txn).await?;
        }
        Ok(())
    }
}
