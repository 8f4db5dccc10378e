//! The long-lived side of the queue: one [`Runtime`] per process runs the producer (claims
//! tasks for free executor slots), the workers, the completer (batched outcomes), the
//! heartbeat, the rescuer, the pruner, on PostgreSQL the LISTEN relay, on SQLite the watch
//! for other processes' commits and, with the `amqp`
//! feature and `RuntimeConfig::amqp` set, the RabbitMQ wake-up consumer.
//!
//! # Shutdown
//! [`RuntimeHandle::shutdown`] has two stages. First the producer stops claiming and the
//! running tasks get the grace period to finish. Then whatever still runs is cancelled
//! (its token fires; after `cancel_grace` it is aborted, rolling back its open batch) and
//! handed back to QUEUED without spending an attempt. The completer applies the last
//! outcomes before the node removes its heartbeat row.

mod claim_ahead;
mod completer;
mod heartbeat;
pub(crate) mod inflight;
mod limit_sweep;
mod listener;
mod pace;
mod periodic;
mod producer;
mod pruner;
mod rescuer;
mod sqlite_watch;
mod turns;
mod wal_writes;
mod worker;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::DbBackend;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use heartbeat::HEARTBEAT_INTERVAL_DEFAULT;
pub use pruner::{PRUNE_INTERVAL_DEFAULT, RETENTION_DEFAULT};
pub use rescuer::{NODE_TIMEOUT_DEFAULT, PARK_AFTER_CRASHES_DEFAULT, RESCUE_INTERVAL_DEFAULT};

use crate::error::QueueError;
use crate::executor::Registry;
use crate::periodic::{PeriodicJob, Schedule};
use crate::store::batch_budget::BatchBudget;
use crate::store::watchers::WATCH_TTL;
use crate::store::{NodeIdentity, RescueOutcome, Store};
use claim_ahead::ClaimAhead;
use completer::Completer;
use heartbeat::Heartbeat;
use inflight::{CancelReason, InFlight};
use limit_sweep::{LIMIT_SWEEP_EVERY, LIMIT_SWEEP_JOB, LimitSweep};
use listener::Listener;
use pace::Pace;
use periodic::PeriodicRunner;
use producer::Producer;
use pruner::{PRUNE_JOB, Pruner};
use rescuer::{RESCUE_JOB, Rescuer};
use sqlite_watch::SqliteWatch;
use worker::Worker;

/// Default [`RuntimeConfig::workers`].
pub const WORKERS_DEFAULT: usize = 16;
/// Default [`RuntimeConfig::prefetch`] on PostgreSQL: a claim there costs a statement, a
/// trigger run and a commit whatever its size, so claims of about a thousand short tasks
/// drain them faster than claims of 256 (ADR 0012).
pub const PREFETCH_DEFAULT_POSTGRES: usize = 1024;
/// Default [`RuntimeConfig::prefetch`] on SQLite: its claims cost by the row, and larger
/// ones only held its single writer longer and doubled the node's memory (ADR 0012).
pub const PREFETCH_DEFAULT_SQLITE: usize = 256;

/// The [`RuntimeConfig::prefetch`] a node on `backend` uses unless told otherwise.
pub fn prefetch_default(backend: DbBackend) -> usize {
    match backend {
        DbBackend::Postgres => PREFETCH_DEFAULT_POSTGRES,
        _ => PREFETCH_DEFAULT_SQLITE,
    }
}
/// Default [`RuntimeConfig::sweep_interval`].
pub const SWEEP_INTERVAL_DEFAULT: Duration = Duration::from_secs(1);
/// Default [`RuntimeConfig::sqlite_poll_interval`].
pub const SQLITE_POLL_INTERVAL_DEFAULT: Duration = Duration::from_millis(1);
/// Default [`RuntimeConfig::cancel_grace`].
pub const CANCEL_GRACE_DEFAULT: Duration = Duration::from_secs(5);
/// Default [`RuntimeConfig::completion_batch`].
pub const COMPLETION_BATCH_DEFAULT: usize = 256;

/// How a node runs the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    /// This node's stable identity (e.g. the host name); the node id of each start is
    /// `<system_id>-<startup timestamp>`. Default `"bulkq"`.
    pub system_id: String,
    /// Executor slots: tasks this node runs at once. Default [`WORKERS_DEFAULT`] (16).
    pub workers: usize,
    /// The most claimed tasks a node may hold beyond its free slots, ready to start the
    /// moment a slot frees up: fewer, larger claims for queues of many short tasks. A held
    /// task waits for a slot of this node even while another node idles, so a node holds
    /// only what its slots finish within 20 ms at the pace of its recent tasks: none before
    /// its first task finishes, none while tasks run for seconds (as bulk actions do). A
    /// PostgreSQL node alone in its cluster claims the next batch while it still holds the
    /// last one, so it may hold up to twice this (ADR 0012).
    /// `None` (the default): [`prefetch_default`] for the store's backend; `Some(0)` turns
    /// holding off.
    pub prefetch: Option<usize>,
    /// How long the producer sleeps without a wake-up before looking for due tasks anyway:
    /// the safety net for a missed notification. Default [`SWEEP_INTERVAL_DEFAULT`] (1 s).
    pub sweep_interval: Duration,
    /// SQLite only: how often the node looks for commits of other processes (tasks they
    /// enqueued) with `PRAGMA data_version`, which costs microseconds; on Linux a write to
    /// the WAL file makes it look at once as well, and it looks only every 100 ms once
    /// the database has gone 100 ms without a commit. PostgreSQL nodes are woken by NOTIFY instead. Default
    /// [`SQLITE_POLL_INTERVAL_DEFAULT`] (1 ms).
    pub sqlite_poll_interval: Duration,
    /// Default [`HEARTBEAT_INTERVAL_DEFAULT`] (5 s).
    pub heartbeat_interval: Duration,
    /// A node without a heartbeat for this long is dead and its tasks are rescued. Must be
    /// well above the heartbeat interval. Default [`NODE_TIMEOUT_DEFAULT`] (30 s).
    pub node_timeout: Duration,
    /// Default [`RESCUE_INTERVAL_DEFAULT`] (15 s).
    pub rescue_interval: Duration,
    /// After this many of its nodes died while running it, a task is parked at FAILURE as
    /// the suspected cause instead of being rescued again (see `Store::task_rescue_many`).
    /// Default [`PARK_AFTER_CRASHES_DEFAULT`] (2).
    pub park_after_crashes: i32,
    /// Default [`PRUNE_INTERVAL_DEFAULT`] (10 min).
    pub prune_interval: Duration,
    /// Finished tasks older than this are deleted. Default [`RETENTION_DEFAULT`] (7 days).
    pub retention: Duration,
    /// How long a cancelled executor may take to stop before it is aborted. Default
    /// [`CANCEL_GRACE_DEFAULT`] (5 s): enough to finish committing a batch.
    pub cancel_grace: Duration,
    /// Outcomes applied per transaction at most. Default [`COMPLETION_BATCH_DEFAULT`].
    pub completion_batch: usize,
    /// While people write through the node (a sign-in, a submission within the last
    /// 30 s), how many batch transactions its tasks may have open at once; the others wait
    /// for one to commit, so a person's query has a core (ADR 0033). Default: the machine's
    /// cores ([`batches_while_people_write_default`]); 0 sets no limit.
    pub batches_while_people_write: usize,
    /// Whether owners take turns for the slots (ADR 0075): within a priority, a claim
    /// prefers the owners with the fewest tasks on the node, and while others' work waits
    /// a node full of one owner's batched tasks lets one of them yield its slot at its next
    /// batch boundary. Off: strictly priority, then age, as a benchmark's baseline. Default
    /// on.
    pub owners_take_turns: bool,
    /// RabbitMQ wake-up hints to consume (feature `amqp`): with `Some`, the producer also
    /// wakes for every hint on the durable queue (see [`crate::amqp`]), which lets stores in
    /// other processes wake this node. Default `None`: no broker involved.
    #[cfg(feature = "amqp")]
    pub amqp: Option<crate::amqp::AmqpConfig>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            system_id: "bulkq".to_owned(),
            workers: WORKERS_DEFAULT,
            prefetch: None,
            sweep_interval: SWEEP_INTERVAL_DEFAULT,
            sqlite_poll_interval: SQLITE_POLL_INTERVAL_DEFAULT,
            heartbeat_interval: HEARTBEAT_INTERVAL_DEFAULT,
            node_timeout: NODE_TIMEOUT_DEFAULT,
            rescue_interval: RESCUE_INTERVAL_DEFAULT,
            park_after_crashes: PARK_AFTER_CRASHES_DEFAULT,
            prune_interval: PRUNE_INTERVAL_DEFAULT,
            retention: RETENTION_DEFAULT,
            cancel_grace: CANCEL_GRACE_DEFAULT,
            completion_batch: COMPLETION_BATCH_DEFAULT,
            batches_while_people_write: batches_while_people_write_default(),
            owners_take_turns: true,
            #[cfg(feature = "amqp")]
            amqp: None,
        }
    }
}

/// The default [`RuntimeConfig::batches_while_people_write`]: one open batch per core.
pub fn batches_while_people_write_default() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl RuntimeConfig {
    /// Rejects settings the runtime cannot work with.
    pub fn validate(&self) -> Result<(), QueueError> {
        let invalid = |reason: &str| Err(QueueError::Invalid(reason.to_owned()));
        if self.system_id.is_empty() {
            return invalid("system_id must not be empty");
        }
        if self.workers == 0 || self.workers > Semaphore::MAX_PERMITS {
            return invalid("workers must be between 1 and the semaphore limit");
        }
        if self.completion_batch == 0 {
            return invalid("completion_batch must be at least 1");
        }
        if self.node_timeout < self.heartbeat_interval * 2 {
            return invalid("node_timeout must be at least twice the heartbeat interval");
        }
        let zero = [
            self.sweep_interval,
            self.sqlite_poll_interval,
            self.heartbeat_interval,
            self.rescue_interval,
            self.prune_interval,
        ];
        if zero.contains(&Duration::ZERO) {
            return invalid("intervals must be positive");
        }
        #[cfg(feature = "amqp")]
        if let Some(amqp) = &self.amqp {
            amqp.validate()?;
        }
        Ok(())
    }
}

/// Starts the queue services of this node.
pub struct Runtime;

impl Runtime {
    /// Registers this node (first heartbeat), rescues what dead nodes and earlier
    /// incarnations of this node left behind, and starts the services. On PostgreSQL it
    /// returns once the node listens to the other nodes (or after `LISTEN_START_TIMEOUT`),
    /// so events of tasks they change from then on reach this node's subscribers.
    pub async fn start(
        config: RuntimeConfig,
        store: Store,
        registry: Registry,
    ) -> Result<RuntimeHandle, QueueError> {
        config.validate()?;
        let wal_left_to_replicator = store.wal_left_to_replicator().await?;
        crate::metrics::slots(config.workers);
        let node = NodeIdentity {
            worker_slots: config.workers,
            ..NodeIdentity::new(config.system_id.clone(), store.clock().now())
        };
        let node_id: Arc<str> = Arc::from(node.node_id.as_str());
        let inflight = InFlight::default();
        let heartbeat = Heartbeat {
            store: store.clone(),
            node: node.clone(),
            inflight: inflight.clone(),
            watch_ttl: WATCH_TTL.max(config.node_timeout * 2),
            claim_ahead: ClaimAhead::new(node.clone(), config.node_timeout),
        };
        heartbeat.run_once().await?;
        let rescuer = Rescuer {
            store: store.clone(),
            node: node.clone(),
            node_timeout: config.node_timeout,
            park_after_crashes: config.park_after_crashes.max(1),
        };
        let rescued = rescuer.run_once().await?;
        // Data loaded before the node started (an import, a seed) is planned by its real
        // size from the first request on, not only after the first prune.
        store.refresh_planner_statistics_or_warn().await;
        let heartbeat = Arc::new(heartbeat);
        let mut periodic_jobs = registry.periodic_jobs().to_vec();
        periodic_jobs.push(
            PeriodicJob::new(RESCUE_JOB, Schedule::Every(config.rescue_interval), rescuer)
                .with_lock_at_least_half_of(config.rescue_interval),
        );
        periodic_jobs.push(
            PeriodicJob::new(
                PRUNE_JOB,
                Schedule::Every(config.prune_interval),
                Pruner {
                    retention: config.retention,
                },
            )
            .with_lock_at_least_half_of(config.prune_interval),
        );
        let limits = registry.running_limits();
        if !limits.is_empty() {
            periodic_jobs.push(
                PeriodicJob::new(
                    LIMIT_SWEEP_JOB,
                    Schedule::Every(LIMIT_SWEEP_EVERY),
                    LimitSweep { limits },
                )
                .with_lock_at_least_half_of(LIMIT_SWEEP_EVERY),
            );
        }
        let stop_claiming = CancellationToken::new();
        let stop_services = CancellationToken::new();
        let (completions, outcomes) = mpsc::channel(config.completion_batch * 4);
        let completer = tokio::spawn(
            Completer {
                store: store.clone(),
                outcomes,
                batch_max: config.completion_batch,
                node_id: node_id.clone(),
            }
            .run(),
        );
        let tracker = TaskTracker::new();
        let producer = tokio::spawn(
            Producer {
                store: store.clone(),
                worker: Worker {
                    store: store.clone(),
                    registry: Arc::new(registry),
                    inflight: inflight.clone(),
                    completions,
                    cancel_grace: config.cancel_grace,
                    node_id,
                    pace: Pace::default(),
                    batches: BatchBudget::new(config.batches_while_people_write),
                },
                slots: Arc::new(Semaphore::new(config.workers)),
                workers: config.workers,
                prefetch: config
                    .prefetch
                    .unwrap_or_else(|| prefetch_default(store.backend())),
                claim_ahead: heartbeat.claim_ahead.clone(),
                tracker: tracker.clone(),
                sweep_interval: config.sweep_interval,
                owners_take_turns: config.owners_take_turns,
                stop: stop_claiming.clone(),
            }
            .run(),
        );

        let mut services = vec![spawn_every(
            config.heartbeat_interval,
            &stop_services,
            "heartbeat",
            move || {
                let heartbeat = heartbeat.clone();
                async move { heartbeat.run_once().await.map(drop) }
            },
        )];
        for job in periodic_jobs {
            services.push(tokio::spawn(
                PeriodicRunner {
                    store: store.clone(),
                    job,
                    node_id: node.node_id.clone(),
                    stop: stop_services.clone(),
                }
                .run(),
            ));
        }
        match store.backend() {
            DbBackend::Postgres => {
                let (listening, mut listened) = watch::channel(false);
                services.push(tokio::spawn(
                    Listener {
                        store: store.clone(),
                        stop: stop_services.clone(),
                        listening,
                    }
                    .run(),
                ));
                // Until its LISTEN is in place a node misses what the others change, so a
                // subscriber taken before `start` returns would never hear of tasks that
                // another node completed meanwhile (a test with two nodes waited 180 s for
                // them on a slow machine). The database answered the first heartbeat; if
                // LISTEN still takes longer than this, the node starts without waiting and
                // the listener keeps trying.
                if tokio::time::timeout(LISTEN_START_TIMEOUT, listened.wait_for(|up| *up))
                    .await
                    .is_err()
                {
                    tracing::warn!("not listening to other nodes yet; starting anyway");
                }
            }
            DbBackend::Sqlite => {
                services.push(tokio::spawn(
                    SqliteWatch {
                        store: store.clone(),
                        poll_interval: config.sqlite_poll_interval,
                        stop: stop_services.clone(),
                    }
                    .run(),
                ));
                if wal_left_to_replicator {
                    tracing::info!("WAL checkpoints are left to an external replicator");
                } else {
                    let checkpointing = store.clone();
                    services.push(spawn_every(
                        SQLITE_CHECKPOINT_INTERVAL,
                        &stop_services,
                        "WAL checkpoint",
                        move || {
                            let store = checkpointing.clone();
                            async move { store.checkpoint_wal().await }
                        },
                    ));
                }
            }
            _ => {}
        }
        #[cfg(feature = "amqp")]
        if let Some(amqp) = &config.amqp {
            services.push(tokio::spawn(
                crate::amqp::HintConsumer {
                    store: store.clone(),
                    config: amqp.clone(),
                    tag: node.node_id.clone(),
                    stop: stop_services.clone(),
                }
                .run(),
            ));
        }

        Ok(RuntimeHandle {
            store,
            node,
            rescued_at_start: rescued,
            inflight,
            tracker,
            stop_claiming,
            stop_services,
            producer,
            completer,
            services,
        })
    }
}

/// Pause before a service that lost its own connection (LISTEN, the SQLite watch) opens it
/// again.
const RECONNECT_BACKOFF: Duration = Duration::from_secs(1);

/// How often a SQLite node copies its WAL back into the database file, off the writers'
/// path (`Store::checkpoint_wal`): often enough that the WAL, started afresh after each
/// long one, stays below the `wal_autocheckpoint` mark, at which a writer would copy it
/// while holding the write gate, even while bulk work writes a hundred megabytes a second
/// (ADR 0052).
const SQLITE_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(500);

/// How long [`Runtime::start`] waits for a PostgreSQL node's first LISTEN.
const LISTEN_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `session` (a service on a connection of its own, which returns when `stop` fires
/// or fails when the connection does) until `stop` fires, opening a new session
/// [`RECONNECT_BACKOFF`] after each failure.
async fn reconnecting<F, Fut, E>(stop: &CancellationToken, what: &'static str, mut session: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    while !stop.is_cancelled() {
        if let Err(error) = session().await {
            tracing::warn!(%error, service = what, "connection failed; reconnecting");
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(RECONNECT_BACKOFF) => {}
            }
        }
    }
}

/// Runs `tick` now and then every `interval` until `stop` fires; a failed tick is logged and
/// retried at the next one.
fn spawn_every<F, Fut>(
    interval: Duration,
    stop: &CancellationToken,
    name: &'static str,
    tick: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), QueueError>> + Send,
{
    let stop = stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(interval) => {}
            }
            if let Err(error) = tick().await {
                tracing::warn!(%error, service = name, "queue service failed");
            }
        }
    })
}

/// A running node. Call [`RuntimeHandle::shutdown`] to stop it cleanly; dropping it leaves
/// the services running until the process exits.
pub struct RuntimeHandle {
    store: Store,
    node: NodeIdentity,
    rescued_at_start: RescueOutcome,
    inflight: InFlight,
    /// The workers; waited on at shutdown.
    tracker: TaskTracker,
    stop_claiming: CancellationToken,
    stop_services: CancellationToken,
    producer: JoinHandle<()>,
    /// Finishes once the producer and every worker have dropped their outcome senders.
    completer: JoinHandle<()>,
    services: Vec<JoinHandle<()>>,
}

/// What a shutdown did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Tasks still running when the grace period ended (cancelled and handed back).
    pub cancelled: usize,
}

impl RuntimeHandle {
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn node(&self) -> &NodeIdentity {
        &self.node
    }

    /// What the start-up rescue took back from earlier incarnations and dead nodes.
    pub fn rescued_at_start(&self) -> &RescueOutcome {
        &self.rescued_at_start
    }

    /// Stops claiming, waits up to `grace` for running tasks, then cancels the rest and hands
    /// them back; returns once every outcome is stored and the services have stopped.
    pub async fn shutdown(self, grace: Duration) -> ShutdownReport {
        self.stop_claiming.cancel();
        if let Err(error) = self.producer.await {
            tracing::error!(%error, "producer ended abnormally");
        }
        self.tracker.close();
        let mut cancelled = 0;
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            cancelled = self.inflight.claims().len();
            self.inflight.cancel_all(CancelReason::Shutdown);
            self.tracker.wait().await;
        }
        if let Err(error) = self.completer.await {
            tracing::error!(%error, "completer ended abnormally");
        }
        self.stop_services.cancel();
        for service in self.services {
            if let Err(error) = service.await {
                tracing::error!(%error, "queue service ended abnormally");
            }
        }
        let now = self.store.clock().now();
        if let Err(error) = self.store.node_mark_stopped(&self.node.node_id, now).await {
            tracing::warn!(%error, "marking the node stopped failed");
        }
        ShutdownReport { cancelled }
    }

    /// Shutdown without a grace period: cancel everything running now and hand it back.
    pub async fn shutdown_and_cancel(self) -> ShutdownReport {
        self.shutdown(Duration::ZERO).await
    }
}
