//! The loop every bulk action runs: resume from the checkpoint, take the next batch of its
//! target inside a batch transaction, do the batch's work, and commit the work together with
//! the new cursor and report. A crash therefore resumes exactly after the last committed
//! batch: nothing repeated, nothing skipped.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use bulkq_types::actions::{ActionKind, ActionReport};
use queue::{Checkpoint, TaskContext, TaskError, WriteTransaction};
use sea_orm::Condition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::pace::SharedPace;
use super::target::{Cursor, Target, TargetBatch};
use crate::CaseloadError;
use crate::access::{Actor, BatchReport};
use crate::outcomes::record_batch;
use crate::search::CandidatesAhead;

/// How many candidates a walk of a query reads ahead at once (see
/// [`crate::search::people_after_reading_ahead`]): a saved query of one first name in a
/// caseload of 100,000 (about 2,600 people) in one read, for 64 KiB of ids.
const CANDIDATES_READ_AHEAD: u64 = 4_096;

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

/// A batch begun by [`Walk::next`]: its task, its transaction, the run_as user, and its
/// people.
pub(crate) struct Step {
    pub task_id: Uuid,
    pub txn: WriteTransaction,
    pub actor: Actor,
    pub batch: TargetBatch,
}

/// A resumable walk over a task's target.
pub(crate) struct Walk<E> {
    target: Target,
    /// A query's candidates read ahead of the cursor, for the batches to come.
    ahead: CandidatesAhead,
    reach: Reach,
    pace: SharedPace,
    /// When the batch now open was begun, and its rows: how the pace learns.
    open_batch: Option<(Instant, u64)>,
    /// The state to commit with the next batch.
    pub progress: Progress<E>,
    /// A progress total to store with the next commit.
    new_total: Option<u64>,
}

impl<E: Serialize + DeserializeOwned + Default + Clone + Send> Walk<E> {
    /// Resumes from the task's checkpoint (`{}` before the first batch).
    pub fn resume(
        ctx: &TaskContext,
        target: Target,
        reach: Reach,
        pace: SharedPace,
    ) -> Result<Self, TaskError> {
        Ok(Walk {
            target,
            ahead: CandidatesAhead::reading(CANDIDATES_READ_AHEAD),
            reach,
            pace,
            open_batch: None,
            progress: last_checkpoint(ctx)?,
            new_total: None,
        })
    }

    /// Begins the next batch; at the end of the target, marks the walk finished and hands
    /// back the transaction that is to commit that (none if it was committed before).
    async fn begin_next(&mut self, ctx: &TaskContext) -> Result<Next, TaskError> {
        if self.progress.finished {
            return Ok(Next::End(None));
        }
        let txn = ctx.begin_batch().await?;
        self.continue_in(ctx, txn).await
    }

    /// Takes the next batch of the target in `txn`, a batch transaction already begun.
    async fn continue_in(
        &mut self,
        ctx: &TaskContext,
        txn: WriteTransaction,
    ) -> Result<Next, TaskError> {
        let began = Instant::now();
        let actor = Actor::load(&*txn, ctx.run_as_id())
            .await
            .map_err(task_error)?;
        let scope = match self.reach {
            Reach::RunAsScope => actor.scope(),
            Reach::Anyone => Condition::all(),
        };
        // Once: a batch begun before the first one committed need not count again.
        if ctx.progress_total().is_none() && self.new_total.is_none() {
            let total = self.target.count(&*txn, scope.clone()).await;
            self.new_total = Some(total.map_err(task_error)?);
        }
        let batch = self
            .target
            .next_batch(
                &*txn,
                scope,
                &self.progress.cursor,
                self.pace.rows(ctx.people_writing()),
                &mut self.ahead,
            )
            .await
            .map_err(task_error)?;
        let Some(batch) = batch else {
            self.finish();
            return Ok(Next::End(Some(txn)));
        };
        self.progress.cursor = batch.next.clone();
        self.open_batch = Some((began, batch.ids.len() as u64));
        Ok(Next::Batch(Step {
            task_id: ctx.task_id(),
            txn,
            actor,
            batch,
        }))
    }

    /// Goes back to the last committed checkpoint, forgetting batches begun since.
    pub fn rewind(&mut self, ctx: &TaskContext) -> Result<(), TaskError> {
        self.progress = last_checkpoint(ctx)?;
        self.new_total = None;
        self.open_batch = None;
        Ok(())
    }

    /// Ends the walk with the next commit; the progress total becomes the people visited.
    fn finish(&mut self) {
        self.progress.finished = true;
        self.new_total = Some(self.progress.cursor.position);
    }

    /// Commits `txn` with the walk's progress.
    pub async fn commit(
        &mut self,
        ctx: &mut TaskContext,
        txn: WriteTransaction,
    ) -> Result<(), TaskError> {
        let total = self.new_total.take();
        commit_progress(ctx, txn, &self.progress, total).await?;
        if let Some((began, rows)) = self.open_batch.take() {
            self.pace.record(rows, began.elapsed());
        }
        Ok(())
    }
}

/// One bulk action's part in a [`Walk`]: what a batch does inside its transaction, how that
/// is recorded in the checkpoint, and what follows the batch's commit.
#[async_trait::async_trait]
pub(crate) trait BatchAction<E: Send>: Sync {
    /// What one batch's work found or did.
    type Done: Send;

    /// Whether two batches may be in flight at once (see [`Walk::run`]): only for work that
    /// touches nothing but its own transaction and its own people.
    const OVERLAPS: bool;

    /// The batch's work, inside its transaction.
    async fn work(&self, step: &Step) -> Result<Self::Done, TaskError>;

    /// Records a batch's work in `progress`, in batch order, just before the batch commits.
    /// Setting `progress.finished` ends the walk with this batch.
    fn record(
        &self,
        step: &Step,
        done: &Self::Done,
        progress: &mut Progress<E>,
    ) -> Result<(), TaskError>;

    /// Work after the batch has committed, outside any transaction (email's sends), recorded
    /// through the walk's own commits.
    async fn after_commit(
        &self,
        _ctx: &mut TaskContext,
        _walk: &mut Walk<E>,
        _done: Self::Done,
    ) -> Result<(), TaskError> {
        Ok(())
    }
}

impl<E: Serialize + DeserializeOwned + Default + Clone + Send> Walk<E> {
    /// Runs `action` on every batch of the walk and commits each with its progress, in
    /// order. For an action that [overlaps](BatchAction::OVERLAPS), where
    /// [`TaskContext::begin_following_batch`] allows (PostgreSQL, with a connection to
    /// spare), two batches run at once, each in its own transaction on its own connection:
    /// the first is recorded and committed as soon as its work is done, the second after it.
    ///
    /// Why: one batch keeps one database backend busy while the other cores wait (ADR 0015).
    /// What keeps it exact: the second batch starts after the first (its cursor), commits
    /// only after the first has committed, and is rolled back if the first fails or ends the
    /// walk, so the last committed checkpoint is always followed by no committed work. A
    /// crash between the two commits resumes after the first; the two batches' people are
    /// disjoint.
    pub async fn run<A: BatchAction<E>>(
        &mut self,
        ctx: &mut TaskContext,
        action: &A,
    ) -> Result<(), TaskError> {
        let mut alone = !A::OVERLAPS;
        loop {
            let first = match self.begin_next(ctx).await? {
                Next::Batch(step) => step,
                Next::End(Some(txn)) => return self.commit(ctx, txn).await,
                Next::End(None) => return Ok(()),
            };
            let following = if alone {
                None
            } else {
                ctx.begin_following_batch(&first.txn).await?
            };
            alone = !A::OVERLAPS;
            let Some(following) = following else {
                let done = action.work(&first).await?;
                self.record_and_commit(ctx, action, first, &done).await?;
                action.after_commit(ctx, self, done).await?;
                continue;
            };
            // What the walk records and commits with the first batch.
            let mut after_first = Progress {
                cursor: first.batch.next.clone(),
                finished: false,
                ..self.progress.clone()
            };
            let second = self.continue_in(ctx, following.txn).await?;
            // The total was counted in the first batch's transaction: it goes with its commit,
            // unless the walk ended with it (the end's commit sets the total visited).
            let total = match second {
                Next::Batch(_) => self.new_total.take(),
                Next::End(_) => None,
            };
            let first_ctx = &mut *ctx;
            let first_committed = async move {
                let done = action.work(&first).await?;
                action.record(&first, &done, &mut after_first)?;
                let total = if after_first.finished {
                    Some(after_first.cursor.position)
                } else {
                    total
                };
                commit_progress(first_ctx, first.txn, &after_first, total).await?;
                Ok::<_, TaskError>((after_first, done))
            };
            let turn = following.turn;
            let second_ready = async move {
                match second {
                    Next::Batch(step) => {
                        let done = action.work(&step).await?;
                        turn.wait(&step.txn).await?;
                        Ok::<_, TaskError>(Second::Batch(step, done))
                    }
                    Next::End(Some(txn)) => {
                        turn.wait(&txn).await?;
                        Ok(Second::End(Some(txn)))
                    }
                    Next::End(None) => Ok(Second::End(None)),
                }
            };
            let (first_committed, second_ready) = tokio::join!(first_committed, second_ready);
            // A failed batch rolled back, and the second, if the first failed, with it.
            let ((after_first, first_done), second) = match (first_committed, second_ready) {
                (Ok(first), Ok(second)) => (first, second),
                (Err(TaskError::Transient(_)), _) | (Ok(_), Err(TaskError::Transient(_))) => {
                    // Most likely the database ended a deadlock with another task's pair of
                    // batches: go on from the last commit, with one batch, in this attempt.
                    self.rewind(ctx)?;
                    alone = true;
                    continue;
                }
                (Err(error), _) | (_, Err(error)) => return Err(error),
            };
            let second_cursor = std::mem::replace(&mut self.progress, after_first).cursor;
            action.after_commit(ctx, self, first_done).await?;
            if self.progress.finished {
                // The first batch ended the walk: the second rolls back unrecorded.
                self.new_total = None;
                self.open_batch = None;
                return Ok(());
            }
            match second {
                Second::Batch(step, done) => {
                    self.progress.cursor = second_cursor;
                    self.record_and_commit(ctx, action, step, &done).await?;
                    action.after_commit(ctx, self, done).await?;
                }
                Second::End(Some(txn)) => {
                    self.finish();
                    return self.commit(ctx, txn).await;
                }
                Second::End(None) => return Ok(()),
            }
        }
    }

    /// Records the work of the batch begun last and commits it.
    async fn record_and_commit<A: BatchAction<E>>(
        &mut self,
        ctx: &mut TaskContext,
        action: &A,
        step: Step,
        done: &A::Done,
    ) -> Result<(), TaskError> {
        action.record(&step, done, &mut self.progress)?;
        if self.progress.finished {
            self.finish();
        }
        self.commit(ctx, step.txn).await
    }
}

/// The future of one batch's database change (see [`DatabaseChange`]).
pub(crate) type ChangeFuture<'s> =
    Pin<Box<dyn Future<Output = Result<BatchReport, CaseloadError>> + Send + 's>>;

/// An action whose whole work is a change in the batch's transaction, reported as a
/// [`BatchReport`] (status change, watch, unwatch, coach reassignment, early alert) whose
/// people's outcomes are recorded in the same transaction: its batches may overlap.
pub(crate) struct DatabaseChange<F> {
    /// Which action: where its changes are already recorded (see [`record_batch`]).
    kind: ActionKind,
    change: F,
}

impl<F> DatabaseChange<F>
where
    F: for<'s> Fn(&'s Step) -> ChangeFuture<'s> + Sync,
{
    pub fn new(kind: ActionKind, change: F) -> Self {
        DatabaseChange { kind, change }
    }
}

#[async_trait::async_trait]
impl<F> BatchAction<()> for DatabaseChange<F>
where
    F: for<'s> Fn(&'s Step) -> ChangeFuture<'s> + Sync,
{
    type Done = BatchReport;
    const OVERLAPS: bool = true;

    async fn work(&self, step: &Step) -> Result<BatchReport, TaskError> {
        let report = (self.change)(step).await.map_err(task_error)?;
        record_batch(&*step.txn, step.task_id, self.kind, &report)
            .await
            .map_err(task_error)?;
        Ok(report)
    }

    fn record(
        &self,
        _step: &Step,
        done: &BatchReport,
        progress: &mut Progress<()>,
    ) -> Result<(), TaskError> {
        done.add_to(&mut progress.report);
        Ok(())
    }
}

/// The second of two batches run at once, once its work is done and its turn has come.
enum Second<D> {
    Batch(Step, D),
    End(Option<WriteTransaction>),
}

/// What [`Walk::begin_next`] found.
enum Next {
    Batch(Step),
    /// The end of the target, with the transaction to commit it in (`None`: already done).
    End(Option<WriteTransaction>),
}

/// The progress the task last committed (the default before its first batch).
fn last_checkpoint<E: DeserializeOwned + Default>(
    ctx: &TaskContext,
) -> Result<Progress<E>, TaskError> {
    serde_json::from_value(ctx.checkpoint().clone())
        .map_err(|e| TaskError::permanent(format!("unreadable checkpoint: {e}")))
}

/// Commits `txn` with `progress` as the checkpoint (and `total` as the progress total).
async fn commit_progress<E: Serialize>(
    ctx: &mut TaskContext,
    txn: WriteTransaction,
    progress: &Progress<E>,
    total: Option<u64>,
) -> Result<(), TaskError> {
    let state = serde_json::to_value(progress).map_err(TaskError::permanent)?;
    let mut checkpoint = Checkpoint::new(state).with_progress(to_i64(progress.cursor.position));
    if let Some(total) = total {
        checkpoint = checkpoint.with_total(to_i64(total));
    }
    ctx.commit_batch(txn, checkpoint).await
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// How a caseload failure ends an attempt: bad input (a status or user deleted since the
/// task was submitted, a spec that does not validate) never gets better, so it fails the
/// task at once; database and file trouble may pass, so it is retried.
pub(crate) fn task_error(error: CaseloadError) -> TaskError {
    match error {
        CaseloadError::Db(error) | CaseloadError::Queue(queue::QueueError::Db(error)) => {
            TaskError::from(error)
        }
        CaseloadError::Io(_) => TaskError::transient(error),
        CaseloadError::Invalid(_)
        | CaseloadError::UsernameTaken(_)
        | CaseloadError::PasswordHash(_)
        | CaseloadError::UnknownStatus(_)
        | CaseloadError::UnknownUser(_)
        | CaseloadError::UserDisabled(_)
        | CaseloadError::NotFound
        | CaseloadError::Queue(_) => TaskError::permanent(error),
    }
}

/// Reads a task's spec as the action's spec type; a spec that does not parse is permanent.
pub(crate) fn read_spec<S: DeserializeOwned>(ctx: &TaskContext) -> Result<S, TaskError> {
    serde_json::from_value(ctx.spec().clone())
        .map_err(|e| TaskError::permanent(format!("unreadable task spec: {e}")))
}
