//! The periodic job that forgets, once it is older than the retention, to whom a bulk email
//! went: the send log gains a row per recipient of every bulk email and would otherwise
//! grow for ever. A row of a task still waiting or running is kept whatever its age: it is
//! what keeps that task from mailing anyone twice.

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use sea_orm::ConnectionTrait;

use crate::CaseloadError;
use crate::store;

/// The job's name in the scheduler.
pub const EMAIL_LOG_CLEANUP_JOB: &str = "caseload.email_log_cleanup";
/// How long a send is remembered unless configured otherwise: long enough to answer "did
/// this person get last term's message?".
pub const EMAIL_LOG_RETENTION_DEFAULT: Duration = Duration::from_secs(90 * 24 * 3600);
/// How often the job runs.
const CLEANUP_EVERY: Duration = Duration::from_secs(3600);
/// Rows deleted per transaction, so the write lock is never held for long.
const DELETED_PER_TRANSACTION: u64 = 10_000;

/// The job, run on one node at a time.
pub fn email_log_cleanup_job(retention: Duration) -> PeriodicJob {
    PeriodicJob::new(
        EMAIL_LOG_CLEANUP_JOB,
        Schedule::Every(CLEANUP_EVERY),
        EmailLogCleanup { retention },
    )
    .with_lock_at_least_half_of(CLEANUP_EVERY)
}

struct EmailLogCleanup {
    retention: Duration,
}

#[async_trait::async_trait]
impl PeriodicTask for EmailLogCleanup {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let retention = chrono::Duration::from_std(self.retention).unwrap_or(chrono::Duration::MAX);
        let Some(before) = ctx.store.clock().now().checked_sub_signed(retention) else {
            return Ok(());
        };
        let mut deleted = 0;
        loop {
            let txn = ctx.store.begin_write().await.map_err(|e| e.to_string())?;
            let count = delete_forgotten_sends(&*txn, before, DELETED_PER_TRANSACTION)
                .await
                .map_err(|e| e.to_string())?;
            txn.commit().await.map_err(|e| e.to_string())?;
            deleted += count;
            if count < DELETED_PER_TRANSACTION {
                break;
            }
        }
        if deleted > 0 {
            tracing::info!(deleted, "forgot bulk email sends past their retention");
        }
        Ok(())
    }
}

/// Deletes at most `limit` send log rows last changed before `before` whose task is not
/// waiting or running; answers how many.
pub async fn delete_forgotten_sends<C: ConnectionTrait>(
    db: &C,
    before: DateTime<Utc>,
    limit: u64,
) -> Result<u64, CaseloadError> {
    store::email_log::delete_forgotten_sends(db, before, limit).await
}
