//! The loop each node runs for each periodic job (see [`crate::periodic`]).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::QueueError;
use crate::periodic::{PeriodicContext, PeriodicJob};
use crate::store::Store;

/// The longest a job's loop sleeps before looking at the shared row again, so a schedule
/// changed by another node (a new deployment) is picked up within this.
const MAX_NAP: Duration = Duration::from_secs(60);
/// The pause after a failed database round, before trying again.
const RETRY_NAP: Duration = Duration::from_secs(1);

pub(crate) struct PeriodicRunner {
    pub store: Store,
    pub job: PeriodicJob,
    pub node_id: String,
    pub stop: CancellationToken,
}

impl PeriodicRunner {
    /// Registers the job and runs its due times until `stop` fires.
    pub async fn run(self) {
        loop {
            let nap = match self.step().await {
                Ok(nap) => nap,
                Err(error) => {
                    tracing::warn!(job = %self.job.name, %error, "periodic job loop failed");
                    RETRY_NAP
                }
            };
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(nap) => {}
            }
        }
    }

    /// Runs the job if a due time has come and this node wins it; returns how long to wait
    /// before looking again.
    async fn step(&self) -> Result<Duration, QueueError> {
        let name = &self.job.name;
        let now = self.store.db_now().await?;
        let schedule = self.job.schedule.describe();
        let row = self.store.periodic_get(name).await?;
        let Some(row) = row.filter(|row| row.schedule == schedule) else {
            // Unknown (first start of the job), or registered by a node with another
            // schedule (a deployment in progress): register this node's schedule.
            let first_due = self.job.schedule.first_due(now)?;
            self.store
                .periodic_register(name, &schedule, first_due)
                .await?;
            return Ok(Duration::ZERO);
        };
        let due = row.next_run_at.unwrap_or(now);
        if now < due {
            return Ok((due - now).to_std().unwrap_or(Duration::ZERO).min(MAX_NAP));
        }
        let next = self.job.schedule.next_after(due, now)?;
        if !self
            .store
            .periodic_claim(name, due, next, &self.node_id, now)
            .await?
        {
            // Another node took this due time; its UPDATE moved the next one on.
            return Ok(Duration::ZERO);
        }
        let result = self.run_locked(due).await?;
        let finished = self.store.db_now().await?;
        self.store
            .periodic_finish(name, due, &result, finished)
            .await?;
        Ok(Duration::ZERO)
    }

    /// Runs the job under its scheduler lock and says how it went.
    async fn run_locked(&self, due: chrono::DateTime<chrono::Utc>) -> Result<String, QueueError> {
        let lock = self.job.lock_name();
        let Some(grant) = self
            .store
            .lock_try_acquire(&lock, &self.node_id, self.job.lock_at_most_for)
            .await?
        else {
            return Ok("skipped: the previous run still holds the lock".into());
        };
        let ctx = PeriodicContext {
            store: self.store.clone(),
            due,
            node_id: self.node_id.clone(),
        };
        let result = match self.job.task.run(&ctx).await {
            Ok(()) => "ok".to_owned(),
            Err(error) => {
                tracing::warn!(job = %self.job.name, %error, "periodic job failed");
                format!("failed: {error}")
            }
        };
        self.store.lock_release(grant, Duration::ZERO).await?;
        Ok(result)
    }
}
