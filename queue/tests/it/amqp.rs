//! RabbitMQ wake-up hints against the real broker (features `testing` and `amqp`).
//!
//! Each test runs a runtime on one store and enqueues through a *second* store on its own
//! connection pool, configured to publish hints. The two share no in-process signal, so the
//! runtime, whose sweep interval is far longer than any deadline here, can start a task
//! quickly only if something crosses between the stores:
//! - on PostgreSQL, LISTEN/NOTIFY would wake the runtime as well and prove nothing about
//!   RabbitMQ, so [`quiet_notify`] first switches NOTIFY off for the test database (a no-op
//!   `pg_notify` ahead of the built-in on the search path). RabbitMQ is then the only wake-up
//!   path; both stores are opened after that switch, and the setup checks it.
//! - on SQLite (on Linux) the runtime's watch on the WAL file sees every commit as well, so
//!   there the tests show that hints, duplicates and a broker restart do no harm, and the
//!   test that needs the hint path alone (the silent connection) runs on PostgreSQL only.
//!
//! The tests take [`BROKER`] for their whole run: the restart test stops the broker, which
//! would break any other test using it at the time. Each uses its own queue
//! (`bulkq.test.<uuid>`), deleted at the end. Without a broker they print "RabbitMQ
//! SKIPPED" and pass, unless `BULKQ_REQUIRE_RABBITMQ` is set.

use std::collections::HashMap;
use std::process::Command as StdCommand;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::FieldTable;
use lapin::uri::AMQPUri;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use queue::amqp::{CALL_TIMEOUT, PROBE_INTERVAL};
use queue::schema::QueueMigrator;
use queue::testing::{self, Backend, TestDatabase};
use queue::{
    AmqpConfig, Registry, Runtime, RuntimeConfig, RuntimeHandle, Store, TaskContext, TaskError,
    TaskExecutor, TaskStatus,
};
use sea_orm::{ConnectionTrait, Statement};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{MutexGuard, watch};
use tokio::task::JoinSet;
use uuid::Uuid;

use super::{Bundle, PATIENCE, new_task};

queue::backend_tests!(queue::schema::QueueMigrator =>
    hints_wake_a_runtime_that_shares_nothing_with_the_enqueuer,
    a_broker_restart_loses_and_doubles_no_task,
    duplicate_and_garbage_hints_are_harmless,
);

/// Held by each test for its whole run (see the module doc).
static BROKER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const COMPONENT: &str = "test.amqp";
/// How soon a hinted task must have started: far below every sweep interval used here.
const HINT_DEADLINE: Duration = Duration::from_secs(5);

/// Hint latency with a 60 s sweep: 20 tasks, each committed on its own through the other
/// store, all start within [`HINT_DEADLINE`].
async fn hints_wake_a_runtime_that_shares_nothing_with_the_enqueuer(db: TestDatabase) {
    let Some(mut setup) = Setup::start(db, Duration::from_secs(60), None).await else {
        return;
    };
    let started = Instant::now();
    let mut committed = Vec::new();
    for _ in 0..20 {
        committed.push(setup.enqueue().await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    setup.wait_completed(20, HINT_DEADLINE).await;
    let latencies = setup.log.latencies(&committed);
    let (p50, max) = (
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1],
    );
    println!(
        "amqp wake-up ({:?}): 20 tasks done {:?} after the first commit; commit-to-start \
         p50 {p50:?}, max {max:?} (sweep 60 s)",
        setup.bundle.db.backend,
        started.elapsed()
    );
    assert!(max < HINT_DEADLINE, "a task waited {max:?}");
    setup.assert_each_ran_once(&committed);
    setup.finish().await;
}

/// A stream of tasks while the broker stops and starts again: every task runs exactly once
/// (those whose hints were dropped are caught by the reconnection wake-ups, or at worst the
/// 20 s sweep), and afterwards hints work again at once.
async fn a_broker_restart_loses_and_doubles_no_task(db: TestDatabase) {
    if !rabbitmqctl_available() {
        return;
    }
    let Some(mut setup) = Setup::start(db, Duration::from_secs(20), None).await else {
        return;
    };
    let (phase, phases) = watch::channel(Phase::Up);
    // Tasks enqueued while the broker was down: the restart waits for a few, since stopping
    // the broker may take as long as the stream's first 60 tasks on a loaded machine.
    let (down_enqueued, down_count) = watch::channel(0_usize);
    let stream = async {
        let mut committed = Vec::new();
        let mut enqueued_in = HashMap::<Phase, usize>::new();
        for index in 0..200 {
            if index == 40 {
                phase.send_replace(Phase::Stopping);
            }
            if index == 100 {
                let mut phases = phases.clone();
                let down = phases.wait_for(|phase| *phase >= Phase::Down);
                tokio::time::timeout(PATIENCE, down)
                    .await
                    .expect("the broker stops")
                    .expect("the restart goes on");
            }
            // At least 50 tasks after the restart, however long it takes.
            if index == 150 {
                let mut phases = phases.clone();
                let back = phases.wait_for(|phase| *phase == Phase::Back);
                tokio::time::timeout(PATIENCE, back)
                    .await
                    .expect("the broker comes back")
                    .expect("the restart goes on");
            }
            let now = *phases.borrow();
            committed.push(setup.enqueue().await);
            *enqueued_in.entry(now).or_default() += 1;
            if now == Phase::Down {
                down_enqueued.send_modify(|count| *count += 1);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (committed, enqueued_in)
    };
    let restart = async {
        let mut phases = phases.clone();
        let _ = phases.wait_for(|phase| *phase == Phase::Stopping).await;
        let stopped = BrokerStopped::stop(&setup.queue.url).await;
        phase.send_replace(Phase::Down);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut down_count = down_count.clone();
        let _ = down_count.wait_for(|count| *count >= 5).await;
        stopped.start().await;
        phase.send_replace(Phase::Back);
    };
    let ((committed, enqueued_in), ()) = tokio::join!(stream, restart);
    println!(
        "amqp restart ({:?}): tasks enqueued per broker phase {enqueued_in:?}",
        setup.bundle.db.backend
    );
    assert!(enqueued_in.get(&Phase::Down).is_some_and(|&n| n > 0));

    setup.wait_completed(200, PATIENCE).await;
    setup.assert_each_ran_once(&committed);
    let after_restart = &committed[committed.len() - 50..];
    let latencies = setup.log.latencies(after_restart);
    println!(
        "amqp restart ({:?}): 200 tasks ran once each; the last 50 started within {:?} of \
         their commit (sweep 20 s)",
        setup.bundle.db.backend,
        latencies[latencies.len() - 1]
    );

    // The consumer is back on the queue, and a new task starts at once again.
    setup.queue.wait_for_consumer().await;
    let task = setup.enqueue().await;
    setup.wait_completed(201, HINT_DEADLINE).await;
    println!(
        "amqp restart ({:?}): a task enqueued after the restart started {:?} after its commit",
        setup.bundle.db.backend,
        setup.log.latencies(&[task])[0]
    );
    setup.assert_each_ran_once(&[task]);
    setup.finish().await;
}

/// The same id five times, a message that is no id and an id of no task: the task runs once
/// and the consumer goes on working.
async fn duplicate_and_garbage_hints_are_harmless(db: TestDatabase) {
    let Some(mut setup) = Setup::start(db, Duration::from_secs(60), None).await else {
        return;
    };
    // Enqueued without a hint: nothing wakes the runtime until the hand-made messages do.
    let silent = Store::new(
        queue::database::connect(&setup.bundle.db.url, 2)
            .await
            .unwrap(),
    );
    let mut txn = silent.begin_queue().await.unwrap();
    let task = txn.enqueue(new_task(COMPONENT)).await.unwrap().id;
    txn.commit().await.unwrap();
    let committed_at = Instant::now();

    let id = task.to_string();
    let unknown = Uuid::new_v4().to_string();
    let mut payloads = vec![id.as_bytes(); 5];
    payloads.extend([&b"not a task id"[..], unknown.as_bytes()]);
    setup.queue.publish(&payloads).await;
    setup.wait_completed(1, HINT_DEADLINE).await;
    println!(
        "amqp duplicates ({:?}): the hinted task started {:?} after its commit",
        setup.bundle.db.backend,
        setup.log.latencies(&[(task, committed_at)])[0]
    );

    // Published after the odd messages, so by the time this task has run the consumer has
    // handled all of them.
    let next = setup.enqueue().await;
    setup.wait_completed(2, HINT_DEADLINE).await;
    setup.assert_each_ran_once(&[(task, committed_at), next]);
    setup.finish().await;
}

/// The runtime consumes through a relay whose connection then stops carrying bytes, both
/// ways, with both sockets left open: no error reaches the consumer, and the heartbeat would
/// notice only after two minutes. The consumer's probe must find out and connect again, so
/// a task committed meanwhile (its hint went to the silent connection) starts within one
/// probe interval and one call timeout, far sooner than the 300 s sweep.
/// PostgreSQL only: see the module doc.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_consumer_whose_connection_goes_silent_connects_again() {
    let Some(db) = TestDatabase::create::<QueueMigrator>(Backend::Postgres).await else {
        return;
    };
    let Some(url) = testing::rabbitmq_url().await else {
        return;
    };
    let relay = FreezableRelay::start(&url).await;
    let sweep = Duration::from_secs(300);
    let Some(mut setup) = Setup::start(db, sweep, Some(relay.url.clone())).await else {
        return;
    };
    let before = setup.enqueue().await;
    setup.wait_completed(1, HINT_DEADLINE).await;
    // The producer looks once more after each batch it ran: let it settle, so only a hint
    // (or the probe's reconnection) can start the next task.
    tokio::time::sleep(Duration::from_secs(1)).await;

    relay.freeze();
    let during = setup.enqueue().await;
    let deadline = PROBE_INTERVAL + CALL_TIMEOUT + HINT_DEADLINE;
    setup.wait_completed(2, deadline).await;
    println!(
        "amqp silent connection ({:?}): a task committed after the freeze started {:?} after \
         its commit (probe every {PROBE_INTERVAL:?}, calls time out after {CALL_TIMEOUT:?}, \
         sweep {sweep:?})",
        setup.bundle.db.backend,
        setup.log.latencies(&[during])[0]
    );
    setup.assert_each_ran_once(&[before, during]);
    setup.finish().await;
}

/// Where the broker restart has got to, as the task stream sees it (in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Phase {
    Up,
    Stopping,
    Down,
    Back,
}

/// A runtime consuming hints from a fresh queue and, on its own pool, a store publishing them.
struct Setup {
    runtime: RuntimeHandle,
    /// The store tasks are enqueued through, publishing hints.
    enqueuer: Store,
    log: RunLog,
    queue: TestQueue,
    /// The database with the runtime's store.
    bundle: Bundle,
    // Dropped last, once everything else is cleaned up.
    _broker: MutexGuard<'static, ()>,
}

impl Setup {
    /// `None` when no broker answers (and none is required).
    /// The runtime consumes through `consumer_url` when given, else from the broker itself.
    async fn start(
        db: TestDatabase,
        sweep_interval: Duration,
        consumer_url: Option<String>,
    ) -> Option<Self> {
        let broker = BROKER.lock().await;
        let url = testing::rabbitmq_url().await?;
        quiet_notify(&db).await;
        let queue = TestQueue::create(url.clone()).await;
        let amqp = AmqpConfig {
            queue: queue.name.clone(),
            ..AmqpConfig::new(url)
        };
        let consumer_amqp = AmqpConfig {
            url: consumer_url.unwrap_or_else(|| amqp.url.clone()),
            ..amqp.clone()
        };

        let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
        assert_notify_is_quiet(&store).await;
        let log = RunLog::default();
        let mut registry = Registry::new();
        registry.register(COMPONENT, log.clone());
        // The SQLite commit watch would wake the runtime as well; it looks as rarely as the
        // producer sweeps, so the hint stays the only prompt way to learn of a task.
        let config = RuntimeConfig {
            sweep_interval,
            sqlite_poll_interval: sweep_interval,
            amqp: Some(consumer_amqp),
            ..testing::fast_config("amqp")
        };
        let enqueuer = Store::new(queue::database::connect(&db.url, 4).await.unwrap())
            .with_amqp_hints(&amqp)
            .unwrap();
        let bundle = Bundle {
            events: store.subscribe().await.unwrap(),
            store: store.clone(),
            db,
        };
        let runtime = Runtime::start(config, store, registry).await.unwrap();
        queue.wait_for_consumer().await;
        Some(Self {
            runtime,
            enqueuer,
            log,
            queue,
            bundle,
            _broker: broker,
        })
    }

    /// Enqueues one task through the publishing store; returns it with its commit time.
    async fn enqueue(&self) -> (Uuid, Instant) {
        let mut txn = self.enqueuer.begin_queue().await.unwrap();
        let task = txn.enqueue(new_task(COMPONENT)).await.unwrap();
        txn.commit().await.unwrap();
        (task.id, Instant::now())
    }

    /// Waits up to `limit` until `count` tasks are COMPLETED.
    async fn wait_completed(&mut self, count: u64, limit: Duration) {
        self.bundle
            .wait_count_within(TaskStatus::Completed, count, limit)
            .await;
    }

    /// Each of `tasks` ran exactly once.
    fn assert_each_ran_once(&self, tasks: &[(Uuid, Instant)]) {
        let runs = self.log.runs_per_task();
        for (task, _) in tasks {
            assert_eq!(runs.get(task), Some(&1), "runs of task {task}");
        }
    }

    async fn finish(self) {
        self.runtime.shutdown(Duration::from_secs(5)).await;
    }
}

/// Records when each task started, once per run.
#[derive(Clone, Default)]
struct RunLog {
    runs: Arc<Mutex<Vec<(Uuid, Instant)>>>,
}

#[async_trait]
impl TaskExecutor for RunLog {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let run = (ctx.task_id(), Instant::now());
        self.runs.lock().unwrap().push(run);
        Ok(())
    }
}

impl RunLog {
    fn runs_per_task(&self) -> HashMap<Uuid, usize> {
        let mut counts = HashMap::new();
        for (task, _) in self.runs.lock().unwrap().iter() {
            *counts.entry(*task).or_default() += 1;
        }
        counts
    }

    /// Commit-to-start time of each of `tasks` (which must have run), sorted.
    fn latencies(&self, tasks: &[(Uuid, Instant)]) -> Vec<Duration> {
        let runs = self.runs.lock().unwrap();
        let mut latencies: Vec<Duration> = tasks
            .iter()
            .map(|(task, committed)| {
                let (_, started) = runs
                    .iter()
                    .find(|(ran, _)| ran == task)
                    .expect("the task ran");
                started.saturating_duration_since(*committed)
            })
            .collect();
        latencies.sort();
        latencies
    }
}

/// A durable queue of its own on the broker, deleted when dropped.
struct TestQueue {
    url: String,
    name: String,
}

impl TestQueue {
    /// Declares `bulkq.test.<uuid>` as the runtime will, so it can be inspected at once.
    async fn create(url: String) -> Self {
        let queue = Self {
            url,
            name: format!("bulkq.test.{}", Uuid::new_v4().simple()),
        };
        let (connection, _) = queue.open().await;
        let _ = connection.close(200, "OK".into()).await;
        queue
    }

    async fn open(&self) -> (Connection, Channel) {
        let connection = Connection::connect(&self.url, ConnectionProperties::default())
            .await
            .expect("connect to RabbitMQ");
        let channel = connection.create_channel().await.expect("open a channel");
        channel
            .queue_declare(
                self.name.as_str().into(),
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await
            .expect("declare the test queue");
        (connection, channel)
    }

    /// Waits until the runtime consumes from the queue (the broker counts its consumer).
    async fn wait_for_consumer(&self) {
        let deadline = Instant::now() + PATIENCE;
        let (connection, channel) = self.open().await;
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        loop {
            let declared = channel
                .queue_declare(self.name.as_str().into(), passive, FieldTable::default())
                .await
                .expect("look at the test queue");
            if declared.consumer_count() > 0 {
                break;
            }
            assert!(Instant::now() < deadline, "no consumer on {}", self.name);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = connection.close(200, "OK".into()).await;
    }

    /// Publishes hand-made messages, as a misbehaving publisher might.
    async fn publish(&self, payloads: &[&[u8]]) {
        let (connection, channel) = self.open().await;
        for payload in payloads {
            channel
                .basic_publish(
                    "".into(),
                    self.name.as_str().into(),
                    BasicPublishOptions::default(),
                    payload,
                    BasicProperties::default(),
                )
                .await
                .expect("publish");
        }
        let _ = connection.close(200, "OK".into()).await;
    }
}

impl Drop for TestQueue {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        testing::block_on_aside(async move {
            let Ok(connection) = Connection::connect(&url, ConnectionProperties::default()).await
            else {
                return;
            };
            if let Ok(channel) = connection.create_channel().await {
                let _ = channel
                    .queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                    .await;
            }
            let _ = connection.close(200, "OK".into()).await;
        });
    }
}

/// The broker application stopped with `rabbitmqctl stop_app`. [`BrokerStopped::start`]
/// starts it again; if the test fails first, dropping the guard does, so the broker is never
/// left stopped for the tests and services that follow.
struct BrokerStopped {
    /// The broker, to know when it is back.
    url: String,
    restarted: bool,
}

/// A TCP relay to the broker whose open connections can be frozen: from then on no byte
/// passes either way, yet both sockets stay open, as with a peer that vanished from the
/// network. Connections made after the freeze pass normally. Dropping it closes them all.
struct FreezableRelay {
    /// The broker's URL with the relay's address.
    url: String,
    /// Connections accepted so far, numbered from 0 in order.
    accepted: Arc<AtomicUsize>,
    /// Connections numbered below this are frozen.
    frozen_below: Arc<AtomicUsize>,
    /// Accepts connections and owns their pumps; aborting it drops them.
    relay: tokio::task::JoinHandle<()>,
}

impl FreezableRelay {
    async fn start(broker_url: &str) -> Self {
        let mut uri: AMQPUri = broker_url.parse().expect("the broker URL parses");
        let broker = format!("{}:{}", uri.authority.host, uri.authority.port);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        uri.authority.host = "127.0.0.1".to_owned();
        uri.authority.port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let frozen_below = Arc::new(AtomicUsize::new(0));
        let relay = tokio::spawn({
            let (accepted, frozen_below) = (accepted.clone(), frozen_below.clone());
            async move {
                let mut pumps = JoinSet::new();
                while let Ok((client, _)) = listener.accept().await {
                    let number = accepted.fetch_add(1, Ordering::SeqCst);
                    // A broker that refuses shows as a connection closed at once.
                    let Ok(server) = TcpStream::connect(&broker).await else {
                        continue;
                    };
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    let frozen_below = frozen_below.clone();
                    let frozen = move || number < frozen_below.load(Ordering::SeqCst);
                    pumps.spawn(pump(client_read, server_write, frozen.clone()));
                    pumps.spawn(pump(server_read, client_write, frozen));
                }
            }
        });
        Self {
            url: uri.to_string(),
            accepted,
            frozen_below,
            relay,
        }
    }

    /// Freezes every connection open now.
    fn freeze(&self) {
        let open = self.accepted.load(Ordering::SeqCst);
        self.frozen_below.store(open, Ordering::SeqCst);
    }
}

impl Drop for FreezableRelay {
    fn drop(&mut self) {
        self.relay.abort();
    }
}

/// Copies bytes from `from` to `to` until either side closes; once `frozen` says so, it
/// swallows what it has read and waits forever, holding both sockets open.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    frozen: impl Fn() -> bool + Send + 'static,
) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        if frozen() {
            std::future::pending::<()>().await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

impl BrokerStopped {
    async fn stop(url: &str) -> Self {
        let guard = Self {
            url: url.to_owned(),
            restarted: false,
        };
        let output = tokio::process::Command::from(rabbitmqctl("stop_app"))
            .output()
            .await;
        check_rabbitmqctl("stop_app", output);
        guard
    }

    /// Starts the broker and waits until it accepts AMQP connections again.
    async fn start(mut self) {
        let output = tokio::process::Command::from(rabbitmqctl("start_app"))
            .output()
            .await;
        self.restarted = true;
        check_rabbitmqctl("start_app", output);
        let deadline = Instant::now() + PATIENCE;
        let back = async || Connection::connect(&self.url, ConnectionProperties::default()).await;
        while let Err(error) = back().await {
            assert!(Instant::now() < deadline, "RabbitMQ is back: {error}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for BrokerStopped {
    fn drop(&mut self) {
        if !self.restarted {
            let output = rabbitmqctl("start_app").output();
            check_rabbitmqctl("start_app", output);
            wait_for_port_5672();
        }
    }
}

/// `rabbitmqctl <command>`, to run.
fn rabbitmqctl(command: &str) -> StdCommand {
    let mut rabbitmqctl = StdCommand::new("rabbitmqctl");
    rabbitmqctl.arg(command);
    rabbitmqctl
}

/// Insists that `rabbitmqctl <command>` worked.
fn check_rabbitmqctl(command: &str, output: std::io::Result<std::process::Output>) {
    let output = output.unwrap_or_else(|error| panic!("run rabbitmqctl {command}: {error}"));
    assert!(
        output.status.success(),
        "rabbitmqctl {command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether `rabbitmqctl` can be run here; says so when the restart test is skipped.
fn rabbitmqctl_available() -> bool {
    let found = StdCommand::new("rabbitmqctl")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var_os("BULKQ_REQUIRE_RABBITMQ").is_none(),
            "RabbitMQ is required but rabbitmqctl cannot be run to restart it"
        );
        eprintln!("RabbitMQ SKIPPED: the restart test needs rabbitmqctl on PATH");
    }
    found
}

/// For a guard's `Drop`, which cannot await: waits (up to a minute) until the broker's
/// port takes connections.
fn wait_for_port_5672() {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", 5672)).is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// On PostgreSQL, makes `pg_notify` a no-op for new connections to the test database, by
/// putting a do-nothing function of that name ahead of the built-in on the search path.
/// Connections opened afterwards deliver no NOTIFY at all, so LISTEN cannot wake anyone.
async fn quiet_notify(db: &TestDatabase) {
    if db.backend != Backend::Postgres {
        return;
    }
    db.conn
        .execute_unprepared(
            "CREATE SCHEMA bulkq_quiet;
             CREATE FUNCTION bulkq_quiet.pg_notify(text, text) RETURNS void LANGUAGE sql AS '';
             DO $$ BEGIN
               EXECUTE format('ALTER DATABASE %I SET search_path = bulkq_quiet, pg_catalog, public',
                              current_database());
             END $$;",
        )
        .await
        .expect("switch NOTIFY off for the test database");
}

/// On PostgreSQL, checks that `store`'s connections call the no-op `pg_notify`.
async fn assert_notify_is_quiet(store: &Store) {
    if store.backend() != sea_orm::DbBackend::Postgres {
        return;
    }
    let row = store
        .db()
        .query_one_raw(Statement::from_string(
            store.backend(),
            "SELECT COUNT(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE p.oid = 'pg_notify(text,text)'::regprocedure AND n.nspname = 'bulkq_quiet'",
        ))
        .await
        .unwrap()
        .expect("a row");
    assert_eq!(
        row.try_get_by_index::<i64>(0).unwrap(),
        1,
        "pg_notify resolves to the no-op, so only RabbitMQ can wake the runtime"
    );
}
