//! The idle scenario: a node with nothing to do must cost next to nothing, and still start a
//! task committed by another process at once.
//!
//! The node settles, then its CPU time over [`QUIET`] is read from `/proc` as a share of
//! one core (the goal: at most 1 %). Then this process commits [`TASKS`] no-op tasks one at
//! a time, each after [`GAP`] of quiet, longer than any idle mode of the node's waiting
//! (the SQLite watch slows its timer after a second without commits), and the time from
//! just before each COMMIT to its executor's first line is the wake-up after quiet.

use std::collections::HashMap;
use std::time::Duration;

use queue::Store;
use queue::schema::QueueMigrator;
use queue::testing::{Backend, TestDatabase};
use serde_json::json;

use super::report::{Figure, Report, quantile};
use super::worker::{Nodes, noop_task, unix_micros};
use super::{Error, Shape, commit_to_start_millis, wait_until_drained, work};

/// How long the idle node is measured.
const QUIET: Duration = Duration::from_secs(20);
/// Time for the node to settle first (its start-up sweep and first heartbeat).
const SETTLE: Duration = Duration::from_secs(2);
/// Tasks committed after quiet spells.
const TASKS: usize = 10;
/// The quiet before each of them.
const GAP: Duration = Duration::from_millis(2_500);

/// Runs the scenario; skipped (silently) without a server.
pub async fn idle(report: &mut Report, backend: Backend) -> Result<(), Error> {
    let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
        return Ok(());
    };
    let store = Store::new(db.conn.clone());
    let nodes = Nodes::start(&db.url, Shape::new(1, 16)).await?;
    tokio::time::sleep(SETTLE).await;
    let before = work::cpu(&nodes.pids()).ok_or("no CPU times in /proc")?;
    tokio::time::sleep(QUIET).await;
    let after = work::cpu(&nodes.pids()).ok_or("no CPU times in /proc")?;
    let share = after.nodes_seconds_since(&before) / QUIET.as_secs_f64() * 100.0;

    let mut committed = HashMap::new();
    for _ in 0..TASKS {
        tokio::time::sleep(GAP).await;
        let mut txn = store.begin_queue().await?;
        let task = txn.enqueue(noop_task(uuid::Uuid::nil())).await?;
        committed.insert(task.id, unix_micros());
        txn.commit().await?;
    }
    wait_until_drained(&store).await?;
    let node_report = nodes.stop().await?;
    let millis = commit_to_start_millis(&node_report, &committed)?;
    let name = format!("{backend:?}").to_lowercase();
    println!(
        "{name}: an idle node used {share:.2} % of a core; after {} s of quiet a task started \
         {:.1} ms (p50) after its commit",
        GAP.as_secs_f64(),
        quantile(&millis, 0.5)
    );
    report.add(Figure {
        scenario: "idle",
        backend: name,
        setup: format!("1 × 16, idle {} s, then {TASKS} tasks", QUIET.as_secs()),
        params: json!({
            "quiet_s": QUIET.as_secs(),
            "tasks": TASKS,
            "gap_ms": GAP.as_millis(),
            "enqueued_by": "another process",
        }),
        figures: vec![
            ("idle CPU % of a core", share),
            ("commit-to-start after quiet p50 ms", quantile(&millis, 0.5)),
            ("commit-to-start after quiet max ms", quantile(&millis, 1.0)),
        ],
        peak_rss_mib: node_report.peak_rss_mib,
    });
    Ok(())
}
