//! The periodic job deleting uploads nobody will import: files uploaded but never imported
//! (a preview left, an upload cut off) once a day old, and everything kept for an import
//! whose task the queue has pruned (its error report goes with it).

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::upload::delete_upload;
use crate::CaseloadError;
use crate::store;

/// The job's name in the scheduler.
pub const UPLOAD_CLEANUP_JOB: &str = "caseload.people_import_cleanup";
/// How long an upload no task has taken is kept for its preview.
pub const UNTAKEN_UPLOAD_KEPT: Duration = Duration::from_secs(24 * 3600);
/// How often the job runs.
const CLEANUP_EVERY: Duration = Duration::from_secs(3600);
/// Uploads deleted per run at most, each in its own transaction.
const DELETED_PER_RUN: u64 = 100;

/// The job, run on one node at a time.
pub fn upload_cleanup_job() -> PeriodicJob {
    PeriodicJob::new(
        UPLOAD_CLEANUP_JOB,
        Schedule::Every(CLEANUP_EVERY),
        UploadCleanup,
    )
    .with_lock_at_least_half_of(CLEANUP_EVERY)
}

struct UploadCleanup;

#[async_trait::async_trait]
impl PeriodicTask for UploadCleanup {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let now = ctx.store.clock().now();
        let ids = stale_uploads(ctx.store.db(), now)
            .await
            .map_err(|error| error.to_string())?;
        for id in &ids {
            let txn = ctx.store.begin_write().await.map_err(|e| e.to_string())?;
            delete_upload(&*txn, *id).await.map_err(|e| e.to_string())?;
            txn.commit().await.map_err(|e| e.to_string())?;
        }
        if !ids.is_empty() {
            tracing::info!(
                deleted = ids.len(),
                "deleted people import uploads no task needs"
            );
        }
        Ok(())
    }
}

/// Uploads no task has taken that are older than [`UNTAKEN_UPLOAD_KEPT`], and uploads whose
/// task is gone.
pub async fn stale_uploads<C: ConnectionTrait>(
    db: &C,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, CaseloadError> {
    let kept_since = now - chrono::Duration::from_std(UNTAKEN_UPLOAD_KEPT).unwrap_or_default();
    store::uploads::stale(db, kept_since, DELETED_PER_RUN).await
}
