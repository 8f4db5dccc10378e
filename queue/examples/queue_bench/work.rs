//! What a drain costs the database, per task, on PostgreSQL: committed transactions (per
//! 1,000 tasks, as a batching queue commits far fewer than one a task), rows inserted,
//! updated and deleted, and write-ahead log written.
//!
//! A drain's rate on two cores is bounded by the work each task asks of the server, and these
//! counts are what can be compared with another queue's on the same server (`make
//! bench-peers` reads the same figures from graphile-worker's drain). They come from
//! `pg_stat_database` (this database's own counters, trigger-written rows included) and
//! `pg_current_wal_lsn()` (server-wide, so it assumes nothing else writes during the drain).
//!
//! Beside them, where the two cores' time went (Linux only): the machine's busy time from
//! `/proc/stat` and the nodes' own from `/proc/<pid>/stat`, during the enqueue and during
//! the drain; the rest is the database server's (and this process's polling, a few queries
//! a round). Against the wall time it also says whether the cores were the limit.
//!
//! A backend hands its counters to the statistics system when it ends or at most once a
//! second when idle, so the closing snapshot is read after the nodes have stopped, from a
//! connection of its own, once their backends have had a moment to end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use crate::worker::unix_micros;

type Error = Box<dyn std::error::Error>;

/// How long the closing snapshot waits for the stopped nodes' backends to end and report.
const SETTLE: Duration = Duration::from_millis(500);

const SNAPSHOT: &str = "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, \
     pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint \
     FROM pg_stat_database WHERE datname = current_database()";

/// The counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    commits: i64,
    inserted: i64,
    updated: i64,
    deleted: i64,
    wal_bytes: i64,
}

/// The counters now, read over a connection of its own to the database at `url`; `None` on
/// any backend but PostgreSQL.
pub async fn snapshot(url: &str) -> Result<Option<Snapshot>, Error> {
    if queue::database::backend_of(url) != DbBackend::Postgres {
        return Ok(None);
    }
    let db = queue::database::connect(url, 1).await?;
    let row = db
        .query_one_raw(Statement::from_string(DbBackend::Postgres, SNAPSHOT))
        .await?
        .ok_or("pg_stat_database has no row for this database")?;
    let snapshot = Snapshot {
        commits: row.try_get_by_index(0)?,
        inserted: row.try_get_by_index(1)?,
        updated: row.try_get_by_index(2)?,
        deleted: row.try_get_by_index(3)?,
        wal_bytes: row.try_get_by_index(4)?,
    };
    db.close().await?;
    Ok(Some(snapshot))
}

/// The closing snapshot, taken once the stopped nodes' backends have reported: see the
/// module's doc.
pub async fn settled_snapshot(url: &str) -> Result<Option<Snapshot>, Error> {
    tokio::time::sleep(SETTLE).await;
    snapshot(url).await
}

/// The work between `before` and `after` per task, as named figures.
pub fn per_task(before: Snapshot, after: Snapshot, tasks: usize) -> Vec<(&'static str, f64)> {
    let per = |from: i64, to: i64| (to - from) as f64 / tasks.max(1) as f64;
    vec![
        (
            "commits per 1000 tasks",
            per(before.commits, after.commits) * 1000.0,
        ),
        (
            "rows inserted per task",
            per(before.inserted, after.inserted),
        ),
        ("rows updated per task", per(before.updated, after.updated)),
        ("rows deleted per task", per(before.deleted, after.deleted)),
        ("WAL bytes per task", per(before.wal_bytes, after.wal_bytes)),
    ]
}

/// Clock ticks per second of `/proc`'s CPU times: `USER_HZ`, 100 on every Linux the
/// project runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU time in clock ticks: the whole machine's, and the nodes' part of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    machine: u64,
    nodes: u64,
}

impl Cpu {
    /// The nodes' CPU seconds since `earlier`.
    pub fn nodes_seconds_since(&self, earlier: &Cpu) -> f64 {
        self.nodes.saturating_sub(earlier.nodes) as f64 / TICKS_PER_SECOND
    }
}

/// The CPU time used so far by the machine and by the processes `pids`; `None` where
/// `/proc` does not say (not Linux, or a process already gone).
pub fn cpu(pids: &[u32]) -> Option<Cpu> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    let machine = fields.iter().take(8).sum::<u64>() - fields.get(3)? - fields.get(4)?;
    let mut nodes = 0;
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command name (in parentheses, which may hold spaces): state is the
        // first field, utime the 12th and stime the 13th.
        let after_name = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        nodes += fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    }
    Some(Cpu { machine, nodes })
}

/// How often a [`CpuTrace`] reads the CPU times.
const CPU_SAMPLE: Duration = Duration::from_millis(2);

/// The CPU times of some processes, read every [`CPU_SAMPLE`] on a thread of its own while
/// an enqueue runs, so that they can be split at its commit, which the round dates only
/// once it knows when the first task began (see `round`).
pub struct CpuTrace {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<CpuReadings>,
}

impl CpuTrace {
    pub fn start(pids: Vec<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut readings = vec![(unix_micros(), cpu(&pids))];
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(CPU_SAMPLE);
                readings.push((unix_micros(), cpu(&pids)));
            }
            CpuReadings(readings)
        });
        Self { stop, thread }
    }

    /// Ends the trace with one last reading.
    pub fn stop(self) -> Result<CpuReadings, Error> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "the CPU trace panicked".into())
    }
}

/// A trace's readings: Unix microseconds and the CPU times then.
pub struct CpuReadings(Vec<(i64, Option<Cpu>)>);

impl CpuReadings {
    /// The reading before the enqueue began.
    pub fn first(&self) -> Option<Cpu> {
        self.0.first().and_then(|(_, cpu)| *cpu)
    }

    /// The last reading taken at or before `micros`, or the first if none was.
    pub fn at(&self, micros: i64) -> Option<Cpu> {
        self.0
            .iter()
            .take_while(|(at, _)| *at <= micros)
            .last()
            .or(self.0.first())
            .and_then(|(_, cpu)| *cpu)
    }
}

/// The CPU time of a drain's rounds, split at each enqueue's COMMIT: the enqueue's and the
/// drain's apart, since they are timed apart (and the enqueue is one stream, the drain
/// many). `None` once any reading failed.
#[derive(Debug, Clone, Copy)]
pub struct CpuTally(Option<(Cpu, Cpu)>);

impl Default for CpuTally {
    fn default() -> Self {
        Self(Some((Cpu::default(), Cpu::default())))
    }
}

impl CpuTally {
    /// Adds one round: readings before its enqueue, at its commit and once it drained.
    pub fn add(&mut self, start: Option<Cpu>, committed: Option<Cpu>, drained: Option<Cpu>) {
        let between = |from: Cpu, to: Cpu| Cpu {
            machine: to.machine.saturating_sub(from.machine),
            nodes: to.nodes.saturating_sub(from.nodes),
        };
        let sum = |a: Cpu, b: Cpu| Cpu {
            machine: a.machine + b.machine,
            nodes: a.nodes + b.nodes,
        };
        self.0 = match (self.0, start, committed, drained) {
            (Some((enqueue, drain)), Some(start), Some(committed), Some(drained)) => Some((
                sum(enqueue, between(start, committed)),
                sum(drain, between(committed, drained)),
            )),
            _ => None,
        };
    }

    /// Milliseconds per 1,000 of `tasks`, as named figures; none when a reading failed.
    pub fn figures(&self, tasks: usize) -> Vec<(&'static str, f64)> {
        let Some((enqueue, drain)) = self.0 else {
            return Vec::new();
        };
        let per_thousand =
            |ticks: u64| ticks as f64 / TICKS_PER_SECOND * 1000.0 / tasks.max(1) as f64 * 1000.0;
        vec![
            (
                "enqueue CPU ms per 1000 tasks",
                per_thousand(enqueue.machine),
            ),
            (
                "enqueue worker CPU ms per 1000 tasks",
                per_thousand(enqueue.nodes),
            ),
            ("drain CPU ms per 1000 tasks", per_thousand(drain.machine)),
            (
                "drain worker CPU ms per 1000 tasks",
                per_thousand(drain.nodes),
            ),
        ]
    }
}
