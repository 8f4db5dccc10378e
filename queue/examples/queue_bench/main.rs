//! The queue's benchmark suite: `make bench` (or `cargo run --release -p queue --features
//! testing --example queue_bench -- [--backend sqlite|postgres] [--tasks N] [--aged N]
//! [--prefetch N] [--rounds N] [--only SCENARIO,...]`).
//!
//! Scenarios, each on SQLite and PostgreSQL (skipped when no server answers), each on a
//! database of its own, with the product's default runtime configuration and full
//! durability (SQLite WAL with `synchronous=FULL` as `queue::database` opens it, PostgreSQL
//! with `fsync` and `synchronous_commit` as the server has them):
//! - **drain**: a node enqueues N (20,000) no-op tasks in one bulk call and one
//!   transaction (enqueue rate), then the time from COMMIT until all are COMPLETED (drain
//!   rate; the commit dated as `round` says), with 16 workers in one process; on
//!   PostgreSQL also 2 processes × 8 workers.
//!   Three rounds on the same database; the median round is the figure (see
//!   [`DRAIN_ROUNDS`]; `--rounds N` for another count), as in every drain below. Also the
//!   CPU time per task (the machine's and the nodes'), and on PostgreSQL the database work
//!   per task (see `work`).
//! - **owners**: the drain's tasks spread over ten owners in turn, drained with owners
//!   taking turns (the default) and without (the baseline), each on its own database and
//!   node, their rounds taken in turn (each going first every other round), at least ten
//!   pairs of them; the median of the pairs' ratios, turns over strict order (see
//!   [`drain_pair`]).
//! - **latency**: an idle node; this process enqueues 300 tasks one at a time, each in its
//!   own committed transaction, 20 ms apart; the time from just before COMMIT to the
//!   executor's first line, p50 / p95 / p99 / max. Its baseline, measured after the tasks
//!   at the same cadence: two durable commits in a row (see `floor`), the least any path
//!   from an enqueue's COMMIT to a durable claim costs; the latency as a multiple of theirs.
//! - **idle**: a node with nothing to do, its CPU time over 20 s as a share of a core; then
//!   tasks committed by this process one at a time after 2.5 s of quiet each, commit to
//!   start p50 / max (see `idle`).
//! - **aged**: the drain again with 1,000,000 COMPLETED tasks (and their history) retained
//!   in the table, vacuumed and checkpointed (see `age`), and its rate as a share of the
//!   fresh table's.
//! - **statements**: the drain's baseline in the database, the store's claim and
//!   completion statements alone from two concurrent loops (see `statements`); the
//!   default drain's rate as a share of theirs.
//! - **drain without prefetch**: the drain with `RuntimeConfig::prefetch` at 0
//!   (`--prefetch N` for another value) instead of the backend's default, the baseline for what
//!   nodes gain by holding claimed tasks: the default's rate as a share of this one's.
//!
//! `--only` runs just the named scenarios, of `drain` (1 × 16), `drain_2x8`, `owners`,
//! `statements`, `latency`, `idle`, `aged` and `no_prefetch`: `make bench-peers`
//! (scripts/bench-peers.sh) runs `--backend postgres --only drain,drain_2x8,latency
//! --rounds 1` once per repetition, interleaved with another queue's runs.
//!
//! The nodes are child processes of this one (see `worker`), so the figures include what
//! crosses processes, and each node's peak RSS is its own. Prints one JSON line per scenario
//! and a table at the end. These are figures to read, not tests.

mod floor;
mod idle;
mod report;
mod round;
mod statements;
mod work;
mod worker;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use queue::schema::QueueMigrator;
use queue::testing::{Backend, TestDatabase, postgres_admin_url};
use queue::{Store, TaskFilter, TaskStatus};
use sea_orm::ConnectionTrait;
use serde_json::json;

use report::{Figure, Report, quantile};
use uuid::Uuid;
use worker::{NodeReport, Nodes, noop_task, unix_micros};

type Error = Box<dyn std::error::Error>;

/// Settings from the command line.
struct Settings {
    backends: Vec<Backend>,
    tasks: usize,
    aged: usize,
    prefetch: usize,
    /// Drains per drain scenario.
    rounds: usize,
    /// The scenarios to run, of [`SCENARIOS`].
    only: Vec<String>,
}

impl Settings {
    fn runs(&self, scenario: &str) -> bool {
        self.only.iter().any(|name| name == scenario)
    }
}

/// Every scenario's name for `--only`, in the order they run.
const SCENARIOS: [&str; 8] = [
    "drain",
    "drain_2x8",
    "owners",
    "statements",
    "latency",
    "idle",
    "aged",
    "no_prefetch",
];

/// How the nodes of a drain run.
#[derive(Debug, Clone, Copy)]
struct Shape {
    processes: usize,
    workers: usize,
    /// `None`: the backend's default.
    prefetch: Option<usize>,
    /// The tasks' owners: each enqueue spreads its tasks over this many, in turn.
    owners: usize,
    /// Whether owners take turns for the slots (`RuntimeConfig::owners_take_turns`).
    turns: bool,
}

impl Shape {
    /// `processes` nodes of `workers` slots, with the default prefetch.
    fn new(processes: usize, workers: usize) -> Self {
        Self {
            processes,
            workers,
            prefetch: None,
            owners: 1,
            turns: true,
        }
    }

    fn describe(&self) -> String {
        let mut text = format!("{} × {} workers", self.processes, self.workers);
        if let Some(prefetch) = self.prefetch {
            text.push_str(&format!(", prefetch {prefetch}"));
        }
        if self.owners > 1 {
            text.push_str(&format!(", {} owners", self.owners));
            if !self.turns {
                text.push_str(", no turns");
            }
        }
        text
    }
}

/// Drains per drain scenario, each of the N tasks, on the same database and nodes; the
/// scenario reports the median round (its enqueue and drain) and the extremes. One drain of
/// 20,000 tasks lasts a second or two, and single ones varied by ±15 % (the aged table's
/// share of the fresh rate, a ratio of two of them, by 64–123 % in four runs of one binary).
const DRAIN_ROUNDS: usize = 3;
/// Pairs of rounds of the owners scenario, at least: one pair's ratio of half-second drains
/// ranged from 52 to 125 %, and the median of ten pairs by about ±6 points from run to
/// run, against a goal of 5 %.
const PAIRED_ROUNDS: usize = 10;
const LATENCY_TASKS: usize = 300;
const LATENCY_GAP: Duration = Duration::from_millis(20);
/// Tasks are enqueued this many per transaction when the benchmark enqueues them itself.
const ENQUEUE_CHUNK: usize = 5_000;
/// Concurrent claim-and-complete loops of the statements scenario: two cores, and a node's
/// claims and completions are two streams as well.
const STATEMENT_STREAMS: usize = 2;
/// The owners of the owners scenario's tasks: a busy office's staff with work queued at once.
const OWNERS: usize = 10;
/// How often the parent looks whether the queue has drained.
const POLL: Duration = Duration::from_millis(10);

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [command, url, workers, prefetch, owners, turns, system_id] = args.as_slice()
        && command == "worker"
    {
        let prefetch = match prefetch.as_str() {
            worker::DEFAULT_PREFETCH => None,
            number => Some(number.parse()?),
        };
        let shape = Shape {
            processes: 1,
            workers: workers.parse()?,
            prefetch,
            owners: owners.parse()?,
            turns: turns == "turns",
        };
        return worker::run_node(url, shape, system_id).await;
    }
    let settings = settings(&args)?;
    let mut report = Report::default();
    for &backend in &settings.backends {
        let name = format!("{backend:?}").to_lowercase();
        if backend == Backend::Postgres && postgres_admin_url().await.is_none() {
            println!("{name}: skipped, no server answers");
            continue;
        }
        let single = Shape::new(1, 16);
        // The fresh 1 × 16 drain's rate, what the later scenarios are read against.
        let mut fresh = None;
        if settings.runs("drain") {
            fresh = drain(&mut report, backend, &settings, single, 0, "drain").await?;
        }
        if backend == Backend::Postgres && settings.runs("drain_2x8") {
            drain(
                &mut report,
                backend,
                &settings,
                Shape::new(2, 8),
                0,
                "drain",
            )
            .await?;
        }
        if settings.runs("owners") {
            let owners = Shape {
                owners: OWNERS,
                ..single
            };
            let pair = drain_pair(&mut report, backend, &settings, owners, "owners").await?;
            if let Some((ratio, pairs)) = pair {
                println!(
                    "{name}: {OWNERS} owners taking turns drain at {:.0} % of the strict order's \
                     rate (median of {pairs} paired rounds)",
                    ratio * 100.0,
                );
            }
        }
        if settings.runs("statements")
            && let Some(rate) = statements(&mut report, backend, &settings).await?
            && let Some(fresh) = fresh
        {
            println!(
                "{name}: the default drain at {:.0} % of the statements' rate alone",
                fresh / rate * 100.0
            );
        }
        if settings.runs("latency") {
            latency(&mut report, backend).await?;
        }
        if settings.runs("idle") {
            idle::idle(&mut report, backend).await?;
        }
        if settings.runs("aged")
            && let Some(aged) = drain(
                &mut report,
                backend,
                &settings,
                single,
                settings.aged,
                "aged",
            )
            .await?
            && let Some(fresh) = fresh
        {
            println!(
                "{name}: aged drain at {:.0} % of the fresh table's rate",
                aged / fresh * 100.0
            );
        }
        let baseline = Shape {
            prefetch: Some(settings.prefetch),
            ..single
        };
        if settings.runs("no_prefetch")
            && let Some(rate) = drain(&mut report, backend, &settings, baseline, 0, "drain").await?
            && let Some(fresh) = fresh
        {
            println!(
                "{name}: the default drain at {:.0} % of the rate with prefetch {}",
                fresh / rate * 100.0,
                settings.prefetch,
            );
        }
    }
    report.print_table();
    Ok(())
}

fn settings(args: &[String]) -> Result<Settings, Error> {
    let mut settings = Settings {
        backends: vec![Backend::Sqlite, Backend::Postgres],
        tasks: 20_000,
        aged: 1_000_000,
        prefetch: 0,
        rounds: DRAIN_ROUNDS,
        only: SCENARIOS.map(str::to_owned).to_vec(),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--backend" => {
                settings.backends = vec![match value.as_str() {
                    "sqlite" => Backend::Sqlite,
                    "postgres" => Backend::Postgres,
                    other => return Err(format!("unknown backend {other:?}").into()),
                }]
            }
            "--tasks" => settings.tasks = value.parse()?,
            "--aged" => settings.aged = value.parse()?,
            "--prefetch" => settings.prefetch = value.parse()?,
            "--rounds" => {
                settings.rounds = value.parse()?;
                if settings.rounds == 0 {
                    return Err("--rounds must be at least 1".into());
                }
            }
            "--only" => {
                settings.only = value.split(',').map(str::to_owned).collect();
                if let Some(unknown) = settings
                    .only
                    .iter()
                    .find(|s| !SCENARIOS.contains(&s.as_str()))
                {
                    return Err(
                        format!("unknown scenario {unknown:?}, not one of {SCENARIOS:?}").into(),
                    );
                }
            }
            other => return Err(format!("unknown flag {other:?}").into()),
        }
    }
    Ok(settings)
}

/// The drain scenario on a fresh database (with `aged` finished tasks retained when
/// non-zero), `settings.rounds` times; returns the median round's drain rate, or `None` when
/// the backend has no server. Later rounds find the earlier rounds' tasks retained too (a
/// few ten thousand, beside the aged table's million).
async fn drain(
    report: &mut Report,
    backend: Backend,
    settings: &Settings,
    shape: Shape,
    aged: usize,
    scenario: &'static str,
) -> Result<Option<f64>, Error> {
    let Some(mut run) = DrainRun::start(backend, shape, aged).await? else {
        return Ok(None);
    };
    for _ in 0..settings.rounds {
        run.round(settings.tasks).await?;
    }
    let rates = run.finish(report, settings, scenario, None).await?;
    Ok(Some(median(rates)))
}

/// Two drains of the same shape but for `turns`, on fresh databases, their rounds taken in
/// turn (`settings.rounds` pairs, at least [`PAIRED_ROUNDS`]), so that a machine's slower
/// and faster minutes fall on both alike; returns the median of each pair of rounds' ratio,
/// with turns over without, and the number of pairs, or `None` when the backend has no
/// server. (Single drains of a second vary by more than the turns cost.)
async fn drain_pair(
    report: &mut Report,
    backend: Backend,
    settings: &Settings,
    shape: Shape,
    scenario: &'static str,
) -> Result<Option<(f64, usize)>, Error> {
    let strict = Shape {
        turns: false,
        ..shape
    };
    let turns = Shape {
        turns: true,
        ..shape
    };
    let (Some(mut strict), Some(mut turns)) = (
        DrainRun::start(backend, strict, 0).await?,
        DrainRun::start(backend, turns, 0).await?,
    ) else {
        return Ok(None);
    };
    // Each goes first in every other round: a round leaves work behind (the database's
    // writes to flush, its vacuum) that would otherwise always fall on the same one.
    let pairs = settings.rounds.max(PAIRED_ROUNDS);
    for round in 0..pairs {
        let (first, second) = match round % 2 {
            0 => (&mut strict, &mut turns),
            _ => (&mut turns, &mut strict),
        };
        first.round(settings.tasks).await?;
        second.round(settings.tasks).await?;
    }
    let strict = strict.finish(report, settings, scenario, None).await?;
    let turns = turns
        .finish(report, settings, scenario, Some(&strict))
        .await?;
    Ok(Some((median(paired_ratios(&turns, &strict)), pairs)))
}

/// Each round's rate over the `baseline`'s round of the same number.
fn paired_ratios(rates: &[f64], baseline: &[f64]) -> Vec<f64> {
    rates
        .iter()
        .zip(baseline)
        .map(|(rate, base)| rate / base)
        .collect()
}

/// The median of `values` (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One drain's database and nodes, and the marks of its rounds so far.
struct DrainRun {
    backend: Backend,
    shape: Shape,
    aged: usize,
    db: TestDatabase,
    store: Store,
    ageing: Option<Duration>,
    nodes: Nodes,
    before: Option<work::Snapshot>,
    pids: Vec<u32>,
    marks: Vec<round::Marks>,
}

impl DrainRun {
    /// A fresh database (with `aged` finished tasks retained when non-zero) and the nodes
    /// of `shape` on it; `None` when the backend has no server.
    async fn start(backend: Backend, shape: Shape, aged: usize) -> Result<Option<Self>, Error> {
        let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
            return Ok(None);
        };
        let store = Store::new(db.conn.clone());
        let ageing = match aged {
            0 => None,
            _ => Some(age(&store, aged).await?),
        };
        let nodes = Nodes::start(&db.url, shape).await?;
        let before = work::snapshot(&db.url).await?;
        let pids = nodes.pids();
        Ok(Some(Self {
            backend,
            shape,
            aged,
            db,
            store,
            ageing,
            nodes,
            before,
            pids,
            marks: Vec::new(),
        }))
    }

    /// Enqueues `tasks` no-op tasks and waits until they are drained.
    async fn round(&mut self, tasks: usize) -> Result<(), Error> {
        let trace = work::CpuTrace::start(self.pids.clone());
        let enqueued = self.nodes.enqueue(tasks).await?;
        let cpu = trace.stop()?;
        wait_until_drained(&self.store).await?;
        self.marks.push(round::Marks {
            enqueued,
            cpu,
            drained_at: unix_micros(),
            cpu_drained: work::cpu(&self.pids),
        });
        Ok(())
    }

    /// Stops the nodes and reports the rounds; returns each round's drain rate, in the
    /// order they ran (the report gives the median round's). With a `baseline` (another
    /// drain's rates, its rounds taken in turn with these), the report adds the rounds'
    /// rates as shares of the baseline's.
    async fn finish(
        self,
        report: &mut Report,
        settings: &Settings,
        scenario: &'static str,
        baseline: Option<&[f64]>,
    ) -> Result<Vec<f64>, Error> {
        let Self {
            backend,
            shape,
            aged,
            db,
            ageing,
            nodes,
            before,
            marks,
            ..
        } = self;
        let node_report = nodes.stop().await?;
        let after = work::settled_snapshot(&db.url).await?;
        let starts: Vec<i64> = node_report.starts.iter().map(|(_, at)| *at).collect();
        let mut cpu = work::CpuTally::default();
        let mut rounds = Vec::with_capacity(marks.len());
        for round in &marks {
            let timed = round.timed(&starts);
            cpu.add(
                round.cpu.first(),
                round.cpu.at(timed.committed_at),
                round.cpu_drained,
            );
            rounds.push(timed);
        }
        let tasks = settings.tasks as f64;
        let drained = settings.tasks * marks.len();
        let rates: Vec<f64> = rounds
            .iter()
            .map(|round| tasks / round.drain.as_secs_f64())
            .collect();
        rounds.sort();
        let middle = rounds[rounds.len() / 2];
        let rate = tasks / middle.drain.as_secs_f64();
        let mut figures = vec![
            ("enqueue tasks/s", tasks / middle.enqueue.as_secs_f64()),
            ("drain tasks/s", rate),
            ("drain s", middle.drain.as_secs_f64()),
            (
                "slowest round tasks/s",
                tasks / rounds[rounds.len() - 1].drain.as_secs_f64(),
            ),
            (
                "fastest round tasks/s",
                tasks / rounds[0].drain.as_secs_f64(),
            ),
            (
                "started before the enqueue's reply",
                middle.started_early as f64,
            ),
        ];
        if let Some(ageing) = ageing {
            figures.push(("ageing the table s", ageing.as_secs_f64()));
        }
        if let Some(baseline) = baseline {
            let shares = paired_ratios(&rates, baseline);
            let lowest = shares.iter().copied().fold(f64::INFINITY, f64::min);
            let highest = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            figures.extend([
                ("% of baseline, median", 100.0 * median(shares)),
                ("% of baseline, lowest", 100.0 * lowest),
                ("% of baseline, highest", 100.0 * highest),
            ]);
        }
        if let (Some(before), Some(after)) = (before, after) {
            figures.extend(work::per_task(before, after, drained));
        }
        figures.extend(cpu.figures(drained));
        report.add(Figure {
            scenario,
            backend: format!("{backend:?}").to_lowercase(),
            setup: match aged {
                0 => shape.describe(),
                _ => format!("{}, {aged} retained", shape.describe()),
            },
            params: json!({
                "tasks": settings.tasks,
                "rounds": marks.len(),
                "processes": shape.processes,
                "workers_per_process": shape.workers,
                "prefetch": shape.prefetch,
                "owners": shape.owners,
                "owners_take_turns": shape.turns,
                "retained_completed": aged,
            }),
            figures,
            peak_rss_mib: node_report.peak_rss_mib,
        });
        Ok(rates)
    }
}

/// The statements scenario on a fresh database: enqueues the drain's tasks from this
/// process, then claims and completes them with the store alone; returns the rate, or `None`
/// when the backend has no server.
async fn statements(
    report: &mut Report,
    backend: Backend,
    settings: &Settings,
) -> Result<Option<f64>, Error> {
    let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
        return Ok(None);
    };
    let store = Store::new(db.conn.clone());
    enqueue_noops(&store, settings.tasks).await?;
    let (completed, took) = statements::drain(&store, STATEMENT_STREAMS).await?;
    if completed != settings.tasks {
        return Err(format!("{completed} of {} tasks completed", settings.tasks).into());
    }
    let rate = completed as f64 / took.as_secs_f64();
    report.add(Figure {
        scenario: "statements",
        backend: format!("{backend:?}").to_lowercase(),
        setup: format!("{STATEMENT_STREAMS} loops, no engine"),
        params: json!({ "tasks": settings.tasks, "streams": STATEMENT_STREAMS }),
        figures: vec![("drain tasks/s", rate), ("drain s", took.as_secs_f64())],
        peak_rss_mib: queue::testing::peak_rss_mib(),
    });
    Ok(Some(rate))
}

/// Enqueues `count` no-op tasks from this process, [`ENQUEUE_CHUNK`] per transaction.
async fn enqueue_noops(store: &Store, count: usize) -> Result<(), Error> {
    let mut left = count;
    while left > 0 {
        let chunk = left.min(ENQUEUE_CHUNK);
        let mut txn = store.begin_queue().await?;
        txn.enqueue_many((0..chunk).map(|_| noop_task(Uuid::nil())).collect())
            .await?;
        txn.commit().await?;
        left -= chunk;
    }
    Ok(())
}

/// Fills the table with `count` COMPLETED tasks, as months of use would (tasks that ran once
/// and completed store no history rows; their rows imply it); returns how long that took.
async fn age(store: &Store, count: usize) -> Result<Duration, Error> {
    let started = Instant::now();
    enqueue_noops(store, count).await?;
    let db = store.db();
    db.execute_unprepared(
        "UPDATE queue_task SET workflow_status = 'COMPLETED', workflow_stopped_date = created_date",
    )
    .await?;
    // What autovacuum does for tables that aged over months: without it the claim index
    // would still list a million dead QUEUED entries (the drain then ran at 13 % of its
    // fresh rate, and at 53–68 % while `queue_ready` alone was left out), a state no real
    // deployment reaches. It also leaves `queue_ready` recorded as empty, as a drained
    // queue's vacuum does.
    // And then what a database at rest has: its write-ahead log written back. Ageing writes
    // about 3 GB of WAL on PostgreSQL, and the checkpoints it sets off (one every 13-19 s,
    // each writing for 11-12 s) ran on into the aged drain, while every fresh drain starts
    // just after its CREATE DATABASE's own checkpoint.
    let (tidy, settle) = match store.backend() {
        sea_orm::DbBackend::Postgres => (
            "VACUUM ANALYZE queue_task, queue_task_event, queue_ready",
            "CHECKPOINT",
        ),
        _ => ("ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"),
    };
    db.execute_unprepared(tidy).await?;
    db.execute_unprepared(settle).await?;
    Ok(started.elapsed())
}

/// The latency scenario: returns nothing; skipped (silently) without a server.
async fn latency(report: &mut Report, backend: Backend) -> Result<(), Error> {
    let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
        return Ok(());
    };
    let store = Store::new(db.conn.clone());
    let nodes = Nodes::start(&db.url, Shape::new(1, 16)).await?;
    // Let the node settle into waiting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut committed = HashMap::new();
    for _ in 0..LATENCY_TASKS {
        let mut txn = store.begin_queue().await?;
        let task = txn.enqueue(noop_task(Uuid::nil())).await?;
        committed.insert(task.id, unix_micros());
        txn.commit().await?;
        tokio::time::sleep(LATENCY_GAP).await;
    }
    wait_until_drained(&store).await?;
    // The baseline, at the same cadence, with the node idle beside it as before.
    floor::prepare(&db.conn).await?;
    let mut floor_millis = Vec::with_capacity(LATENCY_TASKS);
    for _ in 0..LATENCY_TASKS {
        floor_millis.push(floor::two_commits(&db.conn).await?.as_secs_f64() * 1000.0);
        tokio::time::sleep(LATENCY_GAP).await;
    }
    let node_report = nodes.stop().await?;
    let millis = commit_to_start_millis(&node_report, &committed)?;
    floor_millis.sort_by(f64::total_cmp);
    let name = format!("{backend:?}").to_lowercase();
    println!(
        "{name}: latency p50 / p99 at {:.1} / {:.1} × two bare commits'",
        quantile(&millis, 0.5) / quantile(&floor_millis, 0.5),
        quantile(&millis, 0.99) / quantile(&floor_millis, 0.99),
    );
    report.add(Figure {
        scenario: "latency",
        backend: name,
        setup: format!("1 × 16, idle, {LATENCY_TASKS} tasks"),
        params: json!({
            "tasks": LATENCY_TASKS,
            "gap_ms": LATENCY_GAP.as_millis(),
            "enqueued_by": "another process",
            "baseline": "two durable commits in a row, after the tasks, as far apart",
        }),
        figures: vec![
            ("commit-to-start p50 ms", quantile(&millis, 0.5)),
            ("commit-to-start p95 ms", quantile(&millis, 0.95)),
            ("commit-to-start p99 ms", quantile(&millis, 0.99)),
            ("commit-to-start max ms", quantile(&millis, 1.0)),
            ("two bare commits p50 ms", quantile(&floor_millis, 0.5)),
            ("two bare commits p99 ms", quantile(&floor_millis, 0.99)),
        ],
        peak_rss_mib: node_report.peak_rss_mib,
    });
    Ok(())
}

/// The milliseconds from each task's commit (Unix µs, by id) to its start, sorted; an
/// error unless every task started.
fn commit_to_start_millis(
    node_report: &NodeReport,
    committed: &HashMap<Uuid, i64>,
) -> Result<Vec<f64>, Error> {
    let mut millis: Vec<f64> = node_report
        .starts
        .iter()
        .filter_map(|(id, start)| committed.get(id).map(|at| (start - at) as f64 / 1000.0))
        .collect();
    if millis.len() != committed.len() {
        return Err(format!("{} of {} tasks started", millis.len(), committed.len()).into());
    }
    millis.sort_by(f64::total_cmp);
    Ok(millis)
}

/// Waits until no task is left to run.
///
/// The probe must cost the database next to nothing, or it competes with the nodes for the
/// two cores: it reads the counts the triggers keep (a few rows), where a test of the tasks'
/// status would read the whole table (no index names it) at every poll.
async fn wait_until_drained(store: &Store) -> Result<(), Error> {
    let active = TaskFilter {
        statuses: TaskStatus::ACTIVE.to_vec(),
        ..TaskFilter::default()
    };
    while store.task_count(&active).await? > 0 {
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
