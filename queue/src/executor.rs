//! What a task does: the [`TaskExecutor`] trait, the [`Registry`] that maps component names
//! to executors, and the [`TaskContext`] an executor works through.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, Statement};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::error::{QueueError, TaskError};
use crate::periodic::PeriodicJob;
use crate::runtime::inflight::{CancelReason, RunningTask};
use crate::state::RetryPolicy;
use crate::store::batch_budget::{BatchBudget, BatchPlace};
use crate::store::claim::Checkpoint;
use crate::store::{Store, WriteTransaction};
use crate::task::Task;

/// The work of one component. Implementations must tolerate being run again after a crash:
/// everything committed through [`TaskContext::batch`] stays done, and the checkpoint tells
/// where to resume; anything done outside a batch may be repeated.
#[async_trait::async_trait]
pub trait TaskExecutor: Send + Sync + 'static {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError>;
}

/// How the runtime treats a component's tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentConfig {
    pub retry: RetryPolicy,
    /// An attempt running longer is cancelled and counts as a transient failure. Default
    /// [`ComponentConfig::TIMEOUT_DEFAULT`] (1 h): generous for bulk work over a million
    /// rows, yet a hung task does not hold its slot forever.
    pub timeout: Duration,
    /// At most this many of its tasks run at once across the cluster (every node must be
    /// given the same limit); unlimited when `None` (ADR 0079).
    pub max_running: Option<u32>,
}

impl ComponentConfig {
    pub const TIMEOUT_DEFAULT: Duration = Duration::from_secs(3600);
}

impl Default for ComponentConfig {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            timeout: Self::TIMEOUT_DEFAULT,
            max_running: None,
        }
    }
}

/// A registered executor with its configuration.
#[derive(Clone)]
pub(crate) struct Registered {
    pub executor: Arc<dyn TaskExecutor>,
    pub config: ComponentConfig,
}

/// Executors by component name, and the periodic jobs this node takes part in.
#[derive(Clone, Default)]
pub struct Registry {
    executors: HashMap<String, Registered>,
    periodic: Vec<PeriodicJob>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `executor` for `component` with the default [`ComponentConfig`].
    pub fn register(
        &mut self,
        component: impl Into<String>,
        executor: impl TaskExecutor,
    ) -> &mut Self {
        self.register_with(component, executor, ComponentConfig::default())
    }

    /// Registers `executor` for `component`; a second registration replaces the first.
    pub fn register_with(
        &mut self,
        component: impl Into<String>,
        executor: impl TaskExecutor,
        config: ComponentConfig,
    ) -> &mut Self {
        self.executors.insert(
            component.into(),
            Registered {
                executor: Arc::new(executor),
                config,
            },
        );
        self
    }

    /// Lets at most `max_running` tasks of the registered `component` run at once across the
    /// cluster.
    pub fn limit_running(
        &mut self,
        component: &str,
        max_running: u32,
    ) -> Result<&mut Self, QueueError> {
        let registered = self.executors.get_mut(component).ok_or_else(|| {
            QueueError::Invalid(format!("no executor is registered for {component:?}"))
        })?;
        registered.config.max_running = Some(max_running.max(1));
        Ok(self)
    }

    /// The limited components and their limits.
    pub(crate) fn running_limits(&self) -> Vec<(String, u32)> {
        self.executors
            .iter()
            .filter_map(|(component, registered)| {
                Some((component.clone(), registered.config.max_running?))
            })
            .collect()
    }

    /// The registered component names.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.executors.keys().map(String::as_str)
    }

    pub(crate) fn get(&self, component: &str) -> Option<&Registered> {
        self.executors.get(component)
    }

    /// Adds a periodic job; every node of a cluster should register the same jobs (each due
    /// time runs on one of them).
    pub fn register_periodic(&mut self, job: PeriodicJob) -> &mut Self {
        self.periodic.push(job);
        self
    }

    pub(crate) fn periodic_jobs(&self) -> &[PeriodicJob] {
        &self.periodic
    }
}

/// The future a batch closure returns; boxed because it borrows the transaction, the same
/// shape as SeaORM's `TransactionTrait::transaction`.
pub type BatchFuture<'t> = Pin<Box<dyn Future<Output = Result<Checkpoint, TaskError>> + Send + 't>>;

/// An executor's view of its task and its way to commit work.
pub struct TaskContext {
    store: Store,
    /// The row as claimed, with the checkpoint and progress of the last committed batch.
    task: Task,
    running: Arc<RunningTask>,
    /// The node's budget of open batches while people write.
    batches: BatchBudget,
}

impl TaskContext {
    pub(crate) fn new(
        store: Store,
        task: Task,
        running: Arc<RunningTask>,
        batches: BatchBudget,
    ) -> Self {
        Self {
            store,
            task,
            running,
            batches,
        }
    }

    pub fn task_id(&self) -> Uuid {
        self.task.id
    }

    pub fn component(&self) -> &str {
        &self.task.execution_component_name
    }

    /// The unit of work, as enqueued.
    pub fn spec(&self) -> &serde_json::Value {
        &self.task.execution_spec
    }

    /// The checkpoint of the last committed batch (`{}` before the first).
    pub fn checkpoint(&self) -> &serde_json::Value {
        &self.task.execution_state
    }

    /// Whose permissions the work runs with.
    pub fn run_as_id(&self) -> Uuid {
        self.task.run_as_id
    }

    pub fn owner_id(&self) -> Uuid {
        self.task.owner_id
    }

    /// This attempt's number (1 for the first).
    pub fn attempt(&self) -> i32 {
        self.task.attempt
    }

    pub fn progress_done(&self) -> i64 {
        self.task.progress_done
    }

    pub fn progress_total(&self) -> Option<i64> {
        self.task.progress_total
    }

    /// Begins a second batch of this task beside the open `first`, to be committed after it,
    /// where that can speed the task up: on PostgreSQL when a pooled connection is idle at
    /// this moment; never on SQLite, where a batch holds the store's one write slot and a
    /// second would wait for the first forever. `None` means: go on with one batch.
    ///
    /// Only an idle connection: if tasks that each hold one connection all waited for a
    /// second, none would ever finish. A task that finds one idle here may still wait
    /// briefly, when another takes it first, but then whoever took the last connection is
    /// not waiting (it holds its pair, or found none idle and goes on with one batch), so
    /// the wait ends.
    ///
    /// Commit `first` as soon as its work is done, and the second only after
    /// [`BatchTurn::wait`]: that wait is a lock the database sees, so when two tasks' batches
    /// wait on each other's rows its deadlock detector ends one of them (a transient error)
    /// instead of both waiting forever on each other's commit.
    pub async fn begin_following_batch(
        &self,
        first: &WriteTransaction,
    ) -> Result<Option<FollowingBatch>, TaskError> {
        let spare = self.store.backend() == DbBackend::Postgres
            && self.store.db().get_postgres_connection_pool().num_idle() > 0;
        if !spare {
            return Ok(None);
        }
        // Only a free place: a task holding one must never wait for another.
        let place = match self.people_writing() {
            true => self.batches.free_place(),
            false => Some(BatchPlace::default()),
        };
        let Some(place) = place else {
            return Ok(None);
        };
        let turn = BatchTurn {
            key: format!("batch-turn:{}", self.task.id),
        };
        turn.lock(first).await?;
        self.stop_if_cancelled()?;
        let txn = self.store.begin_write().await?.holding(place);
        Ok(Some(FollowingBatch { txn, turn }))
    }

    /// Brings the planner's statistics up to date where tables have grown tenfold (see
    /// [`Store::refresh_planner_statistics_or_warn`]), for work that fills a table fast,
    /// between its batches.
    pub async fn refresh_planner_statistics(&self) {
        self.store.refresh_planner_statistics_or_warn().await;
    }

    /// Whether people are writing through this node now (see [`Store::people_writing`]):
    /// background work should then keep its transactions short.
    pub fn people_writing(&self) -> bool {
        self.store.people_writing()
    }

    /// Fires when the work should stop: shutdown, timeout, or the task was taken away
    /// (abandoned, rescued). Long steps outside batches should watch it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.running.token
    }

    /// Runs `work` in a transaction and commits it together with the [`Checkpoint`] it
    /// returns, so a crash leaves either the whole batch and its checkpoint or neither.
    ///
    /// The closure form of [`TaskContext::begin_batch`] and [`TaskContext::commit_batch`]
    /// (see there for the guarantees), for work that needs nothing back from the batch. An
    /// error from `work` rolls the batch back and is returned as is.
    pub async fn batch<F>(&mut self, work: F) -> Result<(), TaskError>
    where
        F: for<'t> FnOnce(&'t DatabaseTransaction) -> BatchFuture<'t> + Send,
    {
        let txn = self.begin_batch().await?;
        let checkpoint = work(&txn).await?;
        self.commit_batch(txn, checkpoint).await
    }

    /// Begins a batch: a write transaction for one batch of the executor's work, to be
    /// committed with [`TaskContext::commit_batch`]. Dropping it instead rolls the work back.
    ///
    /// Returns [`TaskError::Cancelled`] once the cancellation token has fired. On SQLite the
    /// transaction holds the store's write slot: keep slow steps that need no database
    /// (network calls) outside it.
    ///
    /// While people write through the node, the batch first waits for a place in the node's
    /// budget of open batches (`RuntimeConfig::batches_while_people_write`).
    pub async fn begin_batch(&self) -> Result<WriteTransaction, TaskError> {
        self.stop_if_cancelled()?;
        self.begin_closing_batch().await
    }

    /// Returns [`TaskError::Cancelled`] once the token has fired, or once the task was asked
    /// to give its slot to another owner's work (which fires the token here, between
    /// batches, so the work stops as at a shutdown: see `runtime::turns`).
    fn stop_if_cancelled(&self) -> Result<(), TaskError> {
        if self.running.yield_asked() {
            self.running.cancel(CancelReason::Yield);
        }
        match self.running.token.is_cancelled() {
            true => Err(TaskError::Cancelled),
            false => Ok(()),
        }
    }

    /// Begins a batch even after the cancellation token has fired, to record side effects
    /// that already happened outside any transaction (messages sent) before stopping, so a
    /// later attempt neither repeats nor loses them. Start no new work in it. The runtime
    /// allows `cancel_grace` for this before it aborts the task, and the commit is guarded
    /// by the claim as always.
    pub async fn begin_closing_batch(&self) -> Result<WriteTransaction, TaskError> {
        let place = match self.people_writing() {
            true => self.batches.wait_for_place().await,
            false => BatchPlace::default(),
        };
        Ok(self.store.begin_write().await?.holding(place))
    }

    /// Commits a batch begun with [`TaskContext::begin_batch`] together with its
    /// [`Checkpoint`], so a crash leaves either the whole batch and its checkpoint or neither.
    ///
    /// The commit is guarded by the claim: if the task was rescued or abandoned meanwhile,
    /// everything rolls back, the cancellation token fires and this returns
    /// [`TaskError::Cancelled`].
    pub async fn commit_batch(
        &mut self,
        txn: WriteTransaction,
        checkpoint: Checkpoint,
    ) -> Result<(), TaskError> {
        let now = self.store.clock().now();
        let saved = self
            .store
            .task_checkpoint_if_executing(
                &*txn,
                self.task.id,
                self.task.lease_version,
                &checkpoint,
                now,
            )
            .await
            .map_err(TaskError::transient)?;
        match saved {
            Some(row) => {
                txn.commit().await?;
                self.store.events().publish(std::slice::from_ref(&row));
                self.task = row;
                Ok(())
            }
            None => {
                // Dropping the transaction rolls the batch back.
                drop(txn);
                self.running.cancel(CancelReason::LeaseLost);
                Err(TaskError::Cancelled)
            }
        }
    }

    /// Stores progress (and keeps the checkpoint) outside a batch of work, e.g. the total
    /// once it is known.
    pub async fn report_progress(
        &mut self,
        done: i64,
        total: Option<i64>,
    ) -> Result<(), TaskError> {
        let checkpoint = Checkpoint {
            state: self.task.execution_state.clone(),
            progress_done: Some(done),
            progress_total: total,
        };
        self.batch(move |_| Box::pin(async move { Ok(checkpoint) }))
            .await
    }
}

/// A batch begun beside an open one of the same task (see
/// [`TaskContext::begin_following_batch`]): its transaction, and its turn to commit.
pub struct FollowingBatch {
    pub txn: WriteTransaction,
    pub turn: BatchTurn,
}

/// The right of a following batch to commit, once the batch before it has ended.
pub struct BatchTurn {
    /// The PostgreSQL advisory lock both batches take, by name.
    key: String,
}

impl BatchTurn {
    /// Waits, inside `txn` (the following batch's), until the batch before it has committed
    /// or rolled back; then `txn` may commit.
    pub async fn wait(self, txn: &WriteTransaction) -> Result<(), TaskError> {
        self.lock(txn).await
    }

    /// Takes the turn's transaction-scoped advisory lock in `txn`, waiting for whoever holds it.
    async fn lock(&self, txn: &WriteTransaction) -> Result<(), TaskError> {
        txn.execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            [self.key.clone().into()],
        ))
        .await?;
        Ok(())
    }
}
