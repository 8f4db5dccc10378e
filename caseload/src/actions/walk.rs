//! The loop every bulk action runs: resume from the checkpoint, take the next batch of its
//! target inside a batch transaction, do the batch's work, and commit the work together with
//! the new cursor and report. A crash therefore resumes exactly after the last committed
//! batch: nothing repeated, nothing skipped.

use queue::{Checkpoint, TaskContext, TaskError, WriteTransaction};
use sea_orm::Condition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::report::ActionReport;
use super::target::{Cursor, Target, TargetBatch};
use crate::CaseloadError;
use crate::access::Actor;

/// A bulk action's checkpoint (the task's `execution_state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Progress<E> {
    pub cursor: Cursor,
    /// The whole target has been visited (or the action stopped early, e.g. at a row cap).
    pub finished: bool,
    pub report: ActionReport,
    /// What else the action must carry from batch to batch (an export's file length).
    pub extra: E,
}

/// Which people a walk may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The run_as user's scope (see [`crate::access`]).
    RunAsScope,
    /// Anyone: for work on the run_as user's own data, which the rule does not limit.
    Anyone,
}

/// A batch begun by [`Walk::next`]: its transaction, the run_as user, and its people.
pub(crate) struct Step {
    pub txn: WriteTransaction,
    pub actor: Actor,
    pub batch: TargetBatch,
}

/// A resumable walk over a task's target.
pub(crate) struct Walk<E> {
    target: Target,
    reach: Reach,
    batch_size: u64,
    /// The state to commit with the next batch.
    pub progress: Progress<E>,
    /// A progress total to store with the next commit.
    new_total: Option<u64>,
}

impl<E: Serialize + DeserializeOwned + Default> Walk<E> {
    /// Resumes from the task's checkpoint (`{}` before the first batch).
    pub fn resume(
        ctx: &TaskContext,
        target: Target,
        reach: Reach,
        batch_size: u64,
    ) -> Result<Self, TaskError> {
        let progress = serde_json::from_value(ctx.checkpoint().clone())
            .map_err(|e| TaskError::permanent(format!("unreadable checkpoint: {e}")))?;
        Ok(Walk {
            target,
            reach,
            batch_size,
            progress,
            new_total: None,
        })
    }

    /// Begins the next batch, or returns `None` when the walk is over (committing that).
    ///
    /// The run_as user is loaded in every batch, so a user deleted mid-task stops it
    /// (permanently) and a changed role applies from the next batch on.
    pub async fn next(&mut self, ctx: &mut TaskContext) -> Result<Option<Step>, TaskError> {
        if self.progress.finished {
            return Ok(None);
        }
        let txn = ctx.begin_batch().await?;
        let actor = Actor::load(&*txn, ctx.run_as_id())
            .await
            .map_err(task_error)?;
        let scope = match self.reach {
            Reach::RunAsScope => actor.scope(),
            Reach::Anyone => Condition::all(),
        };
        if ctx.progress_total().is_none() {
            let total = self.target.count(&*txn, scope.clone()).await;
            self.new_total = Some(total.map_err(task_error)?);
        }
        let batch = self
            .target
            .next_batch(&*txn, scope, &self.progress.cursor, self.batch_size)
            .await
            .map_err(task_error)?;
        if batch.is_empty() {
            self.finish();
            self.commit(ctx, txn).await?;
            return Ok(None);
        }
        self.progress.cursor = batch.next.clone();
        Ok(Some(Step { txn, actor, batch }))
    }

    /// Ends the walk with the next commit; the progress total becomes the people visited.
    pub fn finish(&mut self) {
        self.progress.finished = true;
        self.new_total = Some(self.progress.cursor.position);
    }

    /// Commits `txn` with the walk's progress.
    pub async fn commit(
        &mut self,
        ctx: &mut TaskContext,
        txn: WriteTransaction,
    ) -> Result<(), TaskError> {
        let state = serde_json::to_value(&self.progress).map_err(TaskError::permanent)?;
        let mut checkpoint =
            Checkpoint::new(state).with_progress(to_i64(self.progress.cursor.position));
        if let Some(total) = self.new_total.take() {
            checkpoint = checkpoint.with_total(to_i64(total));
        }
        ctx.commit_batch(txn, checkpoint).await
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// How a caseload failure ends an attempt: bad input (a status or user deleted since the
/// task was submitted, a spec that does not validate) never gets better, so it fails the
/// task at once; database and file trouble may pass, so it is retried.
pub(crate) fn task_error(error: CaseloadError) -> TaskError {
    match error {
        CaseloadError::Db(_) | CaseloadError::Io(_) => TaskError::transient(error),
        CaseloadError::Invalid(_)
        | CaseloadError::UsernameTaken(_)
        | CaseloadError::PasswordHash(_)
        | CaseloadError::UnknownStatus(_)
        | CaseloadError::UnknownUser(_) => TaskError::permanent(error),
    }
}

/// Reads a task's spec as the action's spec type; a spec that does not parse is permanent.
pub(crate) fn read_spec<S: DeserializeOwned>(ctx: &TaskContext) -> Result<S, TaskError> {
    serde_json::from_value(ctx.spec().clone())
        .map_err(|e| TaskError::permanent(format!("unreadable task spec: {e}")))
}
