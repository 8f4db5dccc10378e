//! The benchmark's queue nodes, each a child process (`queue_bench worker <url> <workers>
//! <system id>`), so that enqueueing and executing are measured across processes as in a
//! deployment, and each node's peak RSS is its own.
//!
//! A node prints `ready` once its runtime runs, then obeys lines on stdin:
//! - `enqueue <n>`: enqueues `n` no-op tasks in one bulk call and one transaction, replying
//!   `enqueued <called> <committed>` (Unix microseconds when it began and when its COMMIT
//!   returned; the drain's enqueue, woken in-process like an app's own);
//! - `stop` (or end of input): shuts down and prints one JSON line with when each task's
//!   executor began (Unix microseconds) and the node's peak RSS.

use std::io::Write;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use queue::{
    NewTask, Registry, Runtime, RuntimeConfig, Store, TaskContext, TaskError, TaskExecutor,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use uuid::Uuid;

use queue::testing::peak_rss_mib;

use crate::Shape;

/// The component every benchmark task runs.
pub const NOOP: &str = "bench.noop";
/// A node's prefetch argument that leaves the runtime's default in place.
pub const DEFAULT_PREFETCH: &str = "default";

type Error = Box<dyn std::error::Error>;
type Starts = Arc<Mutex<Vec<(Uuid, i64)>>>;

/// When (Unix microseconds) a node began an enqueue, and when its COMMIT returned.
#[derive(Clone, Copy)]
pub struct Enqueued {
    pub called_at: i64,
    pub replied_at: i64,
}

/// What a node reports when it stops.
#[derive(Serialize, Deserialize, Default)]
pub struct NodeReport {
    /// Task id and the Unix time (µs) its executor began.
    pub starts: Vec<(Uuid, i64)>,
    pub peak_rss_mib: f64,
}

/// A no-op task of `owner`.
pub fn noop_task(owner: Uuid) -> NewTask {
    NewTask::new(NOOP, serde_json::json!({}), owner)
}

/// Now, as Unix microseconds: comparable between the processes of one machine.
pub fn unix_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// Notes when each task's executor began; does nothing else.
struct Noop {
    starts: Starts,
}

#[async_trait::async_trait]
impl TaskExecutor for Noop {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let now = unix_micros();
        if let Ok(mut starts) = self.starts.lock() {
            starts.push((ctx.task_id(), now));
        }
        Ok(())
    }
}

/// The child process's side: run a node until told to stop.
pub async fn run_node(url: &str, shape: Shape, system_id: &str) -> Result<(), Error> {
    let db = queue::database::connect(url, queue::database::DEFAULT_MAX_CONNECTIONS).await?;
    let store = Store::new(db);
    let starts = Starts::default();
    let mut registry = Registry::new();
    registry.register(
        NOOP,
        Noop {
            starts: starts.clone(),
        },
    );
    let config = RuntimeConfig {
        system_id: system_id.to_owned(),
        workers: shape.workers,
        prefetch: shape.prefetch,
        owners_take_turns: shape.turns,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::start(config, store.clone(), registry).await?;
    say("ready")?;
    let mut commands = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = commands.next_line().await? {
        match line.split_once(' ') {
            Some(("enqueue", n)) => {
                // Owners in turn: 0 (nobody in particular) when there is one.
                let owner = |i: usize| Uuid::from_u128((i % shape.owners) as u128);
                let tasks = (0..n.parse::<usize>()?)
                    .map(|i| noop_task(owner(i)))
                    .collect();
                let called_at = unix_micros();
                let mut txn = store.begin_queue().await?;
                txn.enqueue_many(tasks).await?;
                txn.commit().await?;
                say(&format!("enqueued {called_at} {}", unix_micros()))?;
            }
            _ if line == "stop" => break,
            _ => return Err(format!("unknown command {line:?}").into()),
        }
    }
    runtime.shutdown(Duration::from_secs(10)).await;
    let report = NodeReport {
        starts: std::mem::take(&mut *starts.lock().map_err(|_| "poisoned")?),
        peak_rss_mib: peak_rss_mib(),
    };
    say(&serde_json::to_string(&report)?)
}

fn say(line: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    Ok(out.flush()?)
}

/// The parent's handle on its nodes.
pub struct Nodes {
    nodes: Vec<(Child, ChildStdin, Lines<BufReader<ChildStdout>>)>,
}

impl Nodes {
    /// Starts the nodes of `shape` on `url` and waits until all run.
    pub async fn start(url: &str, shape: Shape) -> Result<Self, Error> {
        let mut nodes = Vec::new();
        for i in 0..shape.processes {
            let mut child = Command::new(std::env::current_exe()?)
                .args([
                    "worker",
                    url,
                    &shape.workers.to_string(),
                    &shape
                        .prefetch
                        .map_or(DEFAULT_PREFETCH.to_owned(), |prefetch| prefetch.to_string()),
                    &shape.owners.to_string(),
                    if shape.turns { "turns" } else { "strict" },
                    &format!("bench-{i}"),
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let stdin = child.stdin.take().ok_or("no stdin")?;
            let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
            nodes.push((child, stdin, stdout));
        }
        let mut nodes = Nodes { nodes };
        for i in 0..shape.processes {
            nodes.expect_line(i, "ready").await?;
        }
        Ok(nodes)
    }

    /// The nodes' process ids (those still running).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|(child, _, _)| child.id())
            .collect()
    }

    /// Has the first node enqueue `n` no-op tasks; returns when it began and replied.
    pub async fn enqueue(&mut self, n: usize) -> Result<Enqueued, Error> {
        self.send(0, &format!("enqueue {n}")).await?;
        let reply = self.line(0).await?;
        let (called_at, replied_at) = reply
            .strip_prefix("enqueued ")
            .and_then(|times| times.split_once(' '))
            .ok_or_else(|| format!("unexpected reply {reply:?}"))?;
        Ok(Enqueued {
            called_at: called_at.parse()?,
            replied_at: replied_at.parse()?,
        })
    }

    /// Stops every node and returns what they report, merged.
    pub async fn stop(mut self) -> Result<NodeReport, Error> {
        let mut merged = NodeReport::default();
        for i in 0..self.nodes.len() {
            self.send(i, "stop").await?;
            let report: NodeReport = serde_json::from_str(&self.line(i).await?)?;
            merged.starts.extend(report.starts);
            merged.peak_rss_mib = merged.peak_rss_mib.max(report.peak_rss_mib);
        }
        for (child, _, _) in &mut self.nodes {
            child.wait().await?;
        }
        Ok(merged)
    }

    async fn send(&mut self, i: usize, line: &str) -> Result<(), Error> {
        let stdin = &mut self.nodes[i].1;
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        Ok(stdin.flush().await?)
    }

    async fn line(&mut self, i: usize) -> Result<String, Error> {
        Ok(self.nodes[i]
            .2
            .next_line()
            .await?
            .ok_or("the node exited")?)
    }

    async fn expect_line(&mut self, i: usize, expected: &str) -> Result<(), Error> {
        let line = self.line(i).await?;
        if line == expected {
            Ok(())
        } else {
            Err(format!("node {i} said {line:?}, not {expected:?}").into())
        }
    }
}
