//! `caseload.people_import`: an uploaded CSV file applied to the caseload in checkpointed
//! batches. Each batch reads the next rows from where the last one ended, claims their
//! school ids, records the rows that cannot be imported, brings the rest in step, and
//! commits all of it with the new file position; a full sync then retires, batch by batch,
//! everyone the file did not name. A crash repeats at most the batch it was in. The last
//! batch deletes the stored file and the claimed school ids, keeping the problem rows.

use chrono::Utc;
use queue::{Checkpoint, TaskContext, TaskError, TaskExecutor};

use crate::access::Actor;
use crate::actions::pace::SharedPace;
use crate::actions::walk::{read_spec, task_error};
use crate::people_import::upload::find_upload;
use crate::people_import::{
    ImportPhase, ImportProgress, ImportSpec, PROGRESS_KEY, RowReader, claim_school_ids, sort_rows,
};
use crate::people_sync::{apply, retire};
use crate::store::{imports, uploads};
use crate::users::Role;

/// Rows into an import after which the planner's statistics are first refreshed; then each
/// time the rows have doubled. A first import fills `person` from nothing, and statements
/// planned while it was empty would scan it whole for every batch (ADR 0044).
const STATISTICS_FIRST_ROWS: u64 = 1_000;

pub(crate) struct PeopleImportExecutor {
    pub pace: SharedPace,
}

#[async_trait::async_trait]
impl TaskExecutor for PeopleImportExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let spec: ImportSpec = read_spec(ctx)?;
        let mut progress = ImportProgress::of(ctx.checkpoint());
        let mut reader = RowReader::default();
        let mut statistics_after = STATISTICS_FIRST_ROWS;
        while progress.phase != ImportPhase::Done {
            let began = std::time::Instant::now();
            let txn = ctx.begin_batch().await?;
            let actor = Actor::load(&*txn, ctx.run_as_id())
                .await
                .map_err(task_error)?;
            if actor.role != Role::Admin {
                return Err(TaskError::permanent("only admins may import people"));
            }
            let now = Utc::now();
            let rows = self.pace.rows(ctx.people_writing());
            let mut batch_rows = 0;
            match progress.phase {
                ImportPhase::Rows => {
                    let upload = find_upload(&*txn, spec.upload_id)
                        .await
                        .map_err(task_error)?
                        .ok_or_else(|| TaskError::permanent("the uploaded file was deleted"))?;
                    let at = progress.at.unwrap_or(spec.first_row);
                    let (rows, next, done) = reader
                        .next_rows(&*txn, &upload, at, rows as usize)
                        .await
                        .map_err(task_error)?;
                    batch_rows = rows.len() as u64;
                    let mut sorted = sort_rows(&*txn, &spec.mapping, rows)
                        .await
                        .map_err(task_error)?;
                    let repeated = claim_school_ids(&*txn, spec.upload_id, &mut sorted.records)
                        .await
                        .map_err(task_error)?;
                    sorted.problems.extend(repeated);
                    imports::record_problems(&*txn, spec.upload_id, &sorted.problems)
                        .await
                        .map_err(task_error)?;
                    let records: Vec<_> = sorted
                        .records
                        .into_iter()
                        .map(|(_, record)| record)
                        .collect();
                    let outcomes = apply(&*txn, actor.id, &records, Some(ctx.task_id()), now)
                        .await
                        .map_err(task_error)?;
                    outcomes
                        .iter()
                        .for_each(|outcome| progress.counts.add(*outcome));
                    progress.problems += sorted.problems.len() as u64;
                    progress.rows += (records.len() + sorted.problems.len()) as u64;
                    progress.at = Some(next);
                    if done {
                        progress.phase = match spec.full_sync {
                            true => ImportPhase::Retiring,
                            false => ImportPhase::Done,
                        };
                    }
                }
                ImportPhase::Retiring => {
                    let school_ids = imports::unclaimed_after(
                        &*txn,
                        spec.upload_id,
                        &progress.retired_up_to,
                        rows,
                    )
                    .await
                    .map_err(task_error)?;
                    batch_rows = school_ids.len() as u64;
                    match school_ids.last() {
                        None => progress.phase = ImportPhase::Done,
                        Some(last) => {
                            progress.retired_up_to = last.clone();
                            let outcomes =
                                retire(&*txn, actor.id, &school_ids, Some(ctx.task_id()), now)
                                    .await
                                    .map_err(task_error)?;
                            outcomes
                                .into_iter()
                                .flatten()
                                .for_each(|outcome| progress.counts.add(outcome));
                        }
                    }
                }
                ImportPhase::Done => {}
            }
            // The last batch lets the file go: a finished import needs only its report.
            if progress.phase == ImportPhase::Done {
                uploads::release_file(&*txn, spec.upload_id)
                    .await
                    .map_err(task_error)?;
            }
            let state = serde_json::json!({ PROGRESS_KEY: progress });
            let checkpoint = Checkpoint::new(state)
                .with_progress(i64::try_from(progress.rows).unwrap_or(i64::MAX))
                .with_total(i64::try_from(spec.rows.max(progress.rows)).unwrap_or(i64::MAX));
            ctx.commit_batch(txn, checkpoint).await?;
            self.pace.record(batch_rows, began.elapsed());
            if progress.rows >= statistics_after {
                ctx.refresh_planner_statistics().await;
                statistics_after = progress.rows.saturating_mul(2);
            }
        }
        Ok(())
    }
}
