//! A persistent, transactional task queue on SeaORM, for SQLite and PostgreSQL.
//!
//! Tasks are rows. A caller enqueues inside its own transaction, so a task exists exactly
//! when the caller's writes do; a node's [`Runtime`] claims due tasks for its free executor
//! slots in one statement, runs the registered [`TaskExecutor`], and records the outcome
//! with a guarded UPDATE. Executors commit their work in batches together with a
//! checkpoint, so a crash resumes after the last committed batch. Dead nodes are detected
//! by heartbeat and their tasks rescued. The crate knows nothing about what tasks do.
//!
//! ```text
//!   caller's transaction ──enqueue──► queue_task (QUEUED) ──pg_notify / in-process wake──┐
//!                                                                                        ▼
//!   Runtime: producer ──claim (≤ free slots)──► workers ──outcomes──► completer (batched)
//!            heartbeat · rescuer · pruner · LISTEN relay (PostgreSQL)
//! ```
//!
//! The state machine lives in [`state`] (from `bulkq-types`), whose module documentation
//! draws it.
//!
//! # Using it
//! ```no_run
//! # async fn example(db: sea_orm::DatabaseConnection) -> Result<(), queue::QueueError> {
//! use queue::{Checkpoint, NewTask, Registry, Runtime, RuntimeConfig, Store, TaskContext,
//!             TaskError, TaskExecutor};
//!
//! struct Hello;
//! #[async_trait::async_trait]
//! impl TaskExecutor for Hello {
//!     async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
//!         let state = serde_json::json!({ "done": true });
//!         ctx.batch(move |_txn| Box::pin(async move { Ok(Checkpoint::new(state)) })).await
//!     }
//! }
//!
//! let store = Store::new(db);
//! let mut registry = Registry::new();
//! registry.register("example.hello", Hello);
//! let runtime = Runtime::start(RuntimeConfig::default(), store.clone(), registry).await?;
//!
//! let mut txn = store.begin_queue().await?;
//! // ... the caller's own writes on `&*txn` ...
//! txn.enqueue(NewTask::new("example.hello", serde_json::json!({}), uuid::Uuid::nil())).await?;
//! txn.commit().await?; // commits, then wakes the producers
//!
//! runtime.shutdown(std::time::Duration::from_secs(30)).await;
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`state`] (from `bulkq-types`, shared with the browser): statuses, [`Transition`], the
//!   pure [`after_attempt`] decision.
//! - [`task`]: the types callers pass and get back ([`NewTask`], [`Task`], [`QueueEvent`]…).
//! - [`store`]: [`Store`], the only place SQL lives, and [`IdListFilter`], the id-list
//!   filter the crates that share the app's database use too.
//! - [`executor`]: [`TaskExecutor`], [`Registry`], [`TaskContext`].
//! - [`runtime`]: [`Runtime`] and its services (producer, workers, completer, heartbeat,
//!   periodic jobs (among them the rescuer and the pruner), LISTEN relay).
//! - [`periodic`]: periodic jobs, run on one node per due time across a cluster.
//! - [`schema`]: the migrations, for the host application's migrator.
//! - [`clock`]: time as a dependency, for deterministic tests.
//! - [`database`]: opening a connection with the settings the queue relies on.
//! - `amqp` (feature `amqp`, off by default): optional RabbitMQ wake-up hints between
//!   processes; the database stays the master list.
//! - `testing` (feature `testing`): throwaway databases, the both-backends test macro,
//!   factories.

#[cfg(feature = "amqp")]
pub mod amqp;
pub mod clock;
pub mod database;
pub mod error;
pub mod executor;
pub mod metrics;
pub mod periodic;
pub mod runtime;
pub mod schema;
pub mod store;
pub mod task;

/// The state machine lives in `bulkq-types`, which the browser shares; the queue stores it.
pub use bulkq_types::state;

#[cfg(feature = "testing")]
pub mod testing;

#[cfg(feature = "amqp")]
pub use amqp::AmqpConfig;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{QueueError, TaskError};
pub use executor::{
    BatchFuture, BatchTurn, ComponentConfig, FollowingBatch, Registry, TaskContext, TaskExecutor,
};
pub use periodic::{PeriodicContext, PeriodicJob, PeriodicJobStatus, PeriodicTask, Schedule};
pub use runtime::{Runtime, RuntimeConfig, RuntimeHandle, ShutdownReport};
pub use state::{AttemptInfo, AttemptOutcome, RetryPolicy, TaskStatus, Transition, after_attempt};
pub use store::claim::Checkpoint;
pub use store::limits::LIMIT_PAUSER;
pub use store::lock::{LockGrant, SchedulerLock};
pub use store::transition::Finish;
pub use store::{
    IdListFilter, NodeIdentity, QueueTransaction, RescueOutcome, Store, TaskGetAvailableParams,
    WriteClass, WriteTransaction, id_rows, parked_message, text_rows,
};
pub use task::{
    BulkOutcome, ListedIn, MAX_ATTEMPTS_DEFAULT, NewTask, Node, Page, PausedComponent, QueueEvent,
    StatusCount, Task, TaskCursor, TaskEvent, TaskFilter, TaskListPage, TaskSelector,
};
