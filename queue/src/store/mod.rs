//! The only place SQL lives. [`Store`] is one concrete type over a SeaORM connection; where
//! SQLite and PostgreSQL need different SQL, the method matches on the backend right there
//! (see `dialect`).
//!
//! # Layout
//! - `enqueue`: inserting tasks inside the caller's transaction, [`QueueTransaction`].
//! - `claim`: the producer's claim (and start), the worker's checkpoint and lease checks.
//! - `quotas`: how a claim taking turns splits among owners.
//! - `history`: the history rows a task's row cannot imply, and reading the whole history.
//! - `id_list`: [`IdListFilter`], "this column is one of these ids" as one parameter, and
//!   [`id_rows`], the same ids as rows.
//! - `announce`: PostgreSQL notifications (wake-ups, task events for other nodes), queued
//!   by the statement or transaction that made the change.
//! - `transition`: guarded state changes (worker outcomes) and committing them.
//! - `admin`: retry and abandon (one or many), pause and resume of components.
//! - `node`: heartbeats, rescue of orphaned tasks, pruning.
//! - `lock`: the cluster-wide scheduler lock.
//! - `periodic`: the periodic jobs' shared rows.
//! - `read`: lists, counts, history for dashboards.
//! - `counts`: the counts by status and the throughput the triggers keep.
//! - `statistics`: SQLite's planner statistics, refreshed.
//! - `dialect`: the statements whose text differs between the backends.
//! - `events`: the in-process wake-ups and task events a store's clones share.
//! - `writes`: write transactions behind SQLite's gate ([`WriteTransaction`]).
//! - `write_gate`: SQLite's one writer, people ahead of background work.
//! - `people_writing`: when a person last wrote, for background work to keep out of the way.
//! - `batch_budget`: how many batches may be open at once while people write.

pub(crate) mod admin;
pub(crate) mod announce;
pub(crate) mod batch_budget;
pub mod claim;
pub(crate) mod counts;
pub(crate) mod dialect;
pub(crate) mod enqueue;
pub(crate) mod entity;
mod events;
pub(crate) mod history;
mod id_list;
pub(crate) mod limits;
pub mod lock;
pub(crate) mod node;
mod people_writing;
pub(crate) mod periodic;
mod quotas;
pub(crate) mod read;
mod statistics;
pub mod transition;
mod wal_checkpoint;
pub(crate) mod watchers;
pub mod write_gate;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbBackend, DbErr};
use tokio::sync::broadcast;

use crate::clock::{Clock, SystemClock};
use crate::task::{QueueEvent, Task};

pub use claim::TaskGetAvailableParams;
pub use enqueue::QueueTransaction;
use events::EventBus;
pub use id_list::{IdListFilter, id_rows, text_rows};
pub use node::{NodeIdentity, RescueOutcome, parked_message};
pub use write_gate::WriteClass;
pub use writes::WriteTransaction;
use writes::Writes;

/// Rows per multi-row statement (INSERT, or ids in an `IN` list), well inside both
/// backends' bind-parameter limits.
pub(crate) const INSERT_CHUNK: usize = 500;

/// How recently a person must have written for [`Store::people_writing`] to hold: someone
/// who has just signed in or changed something is likely to write again soon.
pub const PEOPLE_WRITING_WINDOW: Duration = Duration::from_secs(30);

/// How long a submission of bulk work counts as people writing: the seconds in which a busy
/// office's next request comes, so each waits for a short batch, not the 30 s of a person's
/// other writes, in which the work just submitted would run in short batches for nobody's
/// sake (ADR 0033).
pub const SUBMISSION_WRITING_WINDOW: Duration = Duration::from_secs(2);

/// The queue's handle on the database: its SQL (the submodules), its in-process signals
/// ([`EventBus`]), who may write now ([`Writes`]) and, with feature `amqp`, where wake-up
/// hints go. Cheap to clone; clones share the signals and the gate, so share one `Store`
/// (clones of it) between the code that enqueues and the runtime.
#[derive(Clone, Debug)]
pub struct Store {
    db: DatabaseConnection,
    backend: DbBackend,
    clock: Arc<dyn Clock>,
    events: Arc<EventBus>,
    writes: Arc<Writes>,
    /// Where the ids of committed enqueues go as RabbitMQ wake-up hints, if anywhere
    /// (see [`Store::with_amqp_hints`]).
    #[cfg(feature = "amqp")]
    hints: Option<crate::amqp::HintPublisher>,
}

impl Store {
    /// A store on `db` using the wall clock.
    pub fn new(db: DatabaseConnection) -> Self {
        Self::with_clock(db, Arc::new(SystemClock))
    }

    /// A store whose enqueues, admin operations and runtime services read time from `clock`.
    pub fn with_clock(db: DatabaseConnection, clock: Arc<dyn Clock>) -> Self {
        let backend = db.get_database_backend();
        let writes = Arc::new(match backend {
            DbBackend::Sqlite => Writes::single_writer(&db),
            _ => Writes::default(),
        });
        Self {
            db,
            backend,
            clock,
            events: Arc::new(EventBus::default()),
            writes,
            #[cfg(feature = "amqp")]
            hints: None,
        }
    }

    /// Makes this store, and the clones made from it afterwards, publish a RabbitMQ wake-up
    /// hint (the task's id) for every task it enqueues, once the enqueue has committed
    /// (feature `amqp`; see [`crate::amqp`]). Call it before cloning the store. Starts the
    /// background publisher on the current tokio runtime; fails only for a configuration
    /// that could never work, not for a broker that is down (hints are dropped until it is
    /// back).
    #[cfg(feature = "amqp")]
    pub fn with_amqp_hints(
        mut self,
        config: &crate::amqp::AmqpConfig,
    ) -> Result<Self, crate::QueueError> {
        self.hints = Some(crate::amqp::HintPublisher::start(config)?);
        Ok(self)
    }

    /// This store on another pool of the same database, sharing its signals (wake-ups,
    /// events) and the SQLite write gate: so the dashboard can have connections the workers
    /// can never take, while its enqueues still wake them.
    pub fn on_pool(&self, db: DatabaseConnection) -> Store {
        Store { db, ..self.clone() }
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    pub fn backend(&self) -> DbBackend {
        self.backend
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// A stream of task changes: local ones as they commit, and on PostgreSQL those of other
    /// nodes while a [`crate::Runtime`] is listening. On PostgreSQL the first subscription
    /// asks the other nodes to announce their changes (see `watchers`) before it returns, so
    /// it fails if the database cannot be reached.
    pub async fn subscribe(&self) -> Result<broadcast::Receiver<QueueEvent>, crate::QueueError> {
        let receiver = self.events.subscribe();
        self.watch_start().await?;
        Ok(receiver)
    }

    /// Wakes this process's producers. [`Store::notify_enqueued`] does this and more; this
    /// alone suits a commit that made work runnable without knowing which tasks.
    pub fn notify_committed(&self) {
        self.events.wake();
    }

    /// The after-commit hook of an enqueue: wakes this process's producers, announces the
    /// tasks to subscribers and, with `Store::with_amqp_hints` (feature `amqp`), hands their
    /// ids to the RabbitMQ publisher (never waiting for it). Call it after committing a
    /// transaction in which you enqueued through [`Store::enqueue`] yourself, with the rows
    /// it returned; [`QueueTransaction::commit`] does it for you. Forgetting it delays the
    /// tasks by at most the producers' sweep interval.
    pub fn notify_enqueued(&self, tasks: &[Task]) {
        let events: Vec<QueueEvent> = tasks.iter().map(QueueEvent::from).collect();
        self.notify_enqueued_events(&events);
    }

    /// [`Store::notify_enqueued`] from the tasks' events, which is all it needs: a
    /// transaction enqueueing thousands of tasks keeps these rather than their rows.
    pub(crate) fn notify_enqueued_events(&self, events: &[QueueEvent]) {
        if events.is_empty() {
            return;
        }
        self.notify_committed();
        self.events.publish_events(events);
        #[cfg(feature = "amqp")]
        if let Some(hints) = &self.hints {
            hints.send(events.iter().map(|event| event.task_id));
        }
    }

    /// A transaction for queue writes in the background (see [`Store::begin_write_as`]).
    pub async fn begin_write(&self) -> Result<WriteTransaction, DbErr> {
        self.begin_write_as(WriteClass::Background).await
    }

    /// A transaction for queue writes, for a person waiting on the answer (`Interactive`) or
    /// for background work.
    ///
    /// On SQLite it takes the write lock at `BEGIN` (`IMMEDIATE`), so a transaction that reads
    /// before it writes waits for the lock instead of failing with `SQLITE_BUSY` when it tries
    /// to upgrade; and writers of this store first queue on an in-process gate, people ahead
    /// of the background, because SQLite's busy handler waits by sleeping (up to 100 ms a
    /// time) while the lock may long be free, which collapses throughput when many workers
    /// write at once and leaves a sign-in behind every waiting batch. Do not begin a second
    /// write transaction while holding one (e.g. from inside a batch).
    pub async fn begin_write_as(&self, class: WriteClass) -> Result<WriteTransaction, DbErr> {
        self.writes.begin(&self.db, class).await
    }

    /// Whether a person has written through this store (a sign-in, a repair) within
    /// [`PEOPLE_WRITING_WINDOW`], or submitted bulk work within
    /// [`SUBMISSION_WRITING_WINDOW`]: background work should then keep its transactions short,
    /// on SQLite because a person's write waits for the batch holding the lock, on
    /// PostgreSQL because batches compete with people's requests for the cores.
    pub fn people_writing(&self) -> bool {
        self.writes
            .people_writing_within(PEOPLE_WRITING_WINDOW, SUBMISSION_WRITING_WINDOW)
    }

    /// SQLite: waits until the write transactions of this store that are open or queued
    /// for the gate now have ended. SQLite lets one connection write at a time, so while one
    /// of them holds the lock every write to the WAL file is this store's own (see
    /// `runtime::sqlite_watch`). Returns at once on PostgreSQL, which has no gate.
    pub(crate) async fn own_writes_ended(&self) {
        self.writes.own_writes_ended().await
    }

    /// The in-process wake-ups and task events this store's clones share.
    pub(crate) fn events(&self) -> &EventBus {
        &self.events
    }
}
