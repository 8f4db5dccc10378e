//! The loop each node runs for each periodic job (see [`crate::periodic`]).

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::QueueError;
use crate::periodic::{PeriodicContext, PeriodicJob};
use crate::store::Store;
use crate::store::lock::LockGrant;
use crate::store::periodic::LockTimes;

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
        let mut admin_changes = self.store.periodic_changes();
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
                // An admin made a job due now, or paused or resumed one.
                Ok(()) = admin_changes.changed() => {}
            }
        }
    }

    /// The lock times this node declares for the job, as the shared row stores them.
    fn lock_times(&self) -> LockTimes {
        let ms = |duration: Duration| i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        LockTimes {
            at_most_ms: ms(self.job.lock_at_most_for),
            at_least_ms: ms(self.job.lock_at_least_for),
        }
    }

    /// Runs the job if a due time has come and this node wins it; returns how long to wait
    /// before looking again.
    async fn step(&self) -> Result<Duration, QueueError> {
        let name = &self.job.name;
        let now = self.store.db_now().await?;
        let schedule = self.job.schedule.describe();
        let row = self.store.periodic_get(name).await?;
        let locks = self.lock_times();
        let Some(row) = row.filter(|row| {
            row.schedule == schedule
                && row.lock_at_most_ms == Some(locks.at_most_ms)
                && row.lock_at_least_ms == Some(locks.at_least_ms)
        }) else {
            // Unknown (first start of the job), or registered by a node with another
            // schedule or lock times (a deployment in progress): register this node's.
            let first_due = self.job.schedule.first_due(now)?;
            self.store
                .periodic_register(name, &schedule, first_due, locks)
                .await?;
            return Ok(Duration::ZERO);
        };
        if row.paused {
            return Ok(MAX_NAP);
        }
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
        let (result, skipped) = match self.run_locked(due).await? {
            Some(result) => (result, false),
            None => {
                tracing::info!(job = %name, %due, "periodic run skipped: its lock is held");
                ("skipped: the lock was held".to_owned(), true)
            }
        };
        let finished = self.store.db_now().await?;
        self.store
            .periodic_finish(name, due, &result, finished, skipped)
            .await?;
        Ok(Duration::ZERO)
    }

    /// Runs the job under its scheduler lock, extending the lock while the run lasts, and
    /// says how it went; `None` when the lock was held (a run still going on another node,
    /// or one that ended within its `lock_at_least_for`).
    async fn run_locked(
        &self,
        due: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<String>, QueueError> {
        let lock = self.job.lock_name();
        let Some(mut grant) = self
            .store
            .lock_try_acquire(&lock, &self.node_id, self.job.lock_at_most_for)
            .await?
        else {
            return Ok(None);
        };
        let ctx = PeriodicContext {
            store: self.store.clone(),
            due,
            node_id: self.node_id.clone(),
        };
        let run = self.job.task.run(&ctx);
        tokio::pin!(run);
        let mut extend = tokio::time::interval(self.job.lock_extension_every());
        extend.tick().await;
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                _ = extend.tick() => self.extend(&mut grant).await,
            }
        };
        let result = match outcome {
            Ok(()) => "ok".to_owned(),
            Err(error) => {
                tracing::warn!(job = %self.job.name, %error, "periodic job failed");
                format!("failed: {error}")
            }
        };
        self.store
            .lock_release(grant, self.job.lock_at_least_for)
            .await?;
        Ok(Some(result))
    }

    /// Holds the lock another `lock_at_most_for`. A lock that lapsed (the database was out
    /// of reach longer than that) is only reported: the run goes on, and another node may
    /// now run the job's next due time beside it.
    async fn extend(&self, grant: &mut LockGrant) {
        match self
            .store
            .lock_extend(grant, self.job.lock_at_most_for)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(job = %self.job.name, "periodic job's lock lapsed during its run")
            }
            Err(error) => {
                tracing::warn!(job = %self.job.name, %error, "periodic job's lock not extended")
            }
        }
    }
}
