//! Periodic jobs across nodes: each due time runs once in the cluster, missed due times are
//! coalesced into one run, and the rescuer and pruner are periodic jobs too.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::testing::{TestDatabase, fast_config};
use queue::{PeriodicContext, PeriodicJob, PeriodicTask, Registry, Runtime, Schedule, Store};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_job_due_every_second_runs_once_per_due_time_on_three_nodes,
    due_times_missed_while_every_node_was_down_run_once,
);

/// Every run: its due time and the node that ran it.
type Runs = Arc<Mutex<Vec<(DateTime<Utc>, String)>>>;

struct RecordRun(Runs);

#[async_trait::async_trait]
impl PeriodicTask for RecordRun {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        self.0.lock().unwrap().push((ctx.due, ctx.node_id.clone()));
        Ok(())
    }
}

/// A node (its own connection pool) taking part in the job `tick`, due every second.
async fn node(db: &TestDatabase, name: &str, runs: &Runs) -> queue::RuntimeHandle {
    let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
    let mut registry = Registry::new();
    registry.register_periodic(PeriodicJob::new(
        "tick",
        Schedule::Every(Duration::from_secs(1)),
        RecordRun(runs.clone()),
    ));
    Runtime::start(fast_config(name), store, registry)
        .await
        .unwrap()
}

async fn a_job_due_every_second_runs_once_per_due_time_on_three_nodes(db: TestDatabase) {
    let runs = Runs::default();
    let mut nodes = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        nodes.push(node(&db, name, &runs).await);
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    // Counted now: the nodes stop one after another, and the others keep running the job
    // meanwhile (on a loaded machine that took seconds and added runs to the count).
    let in_window = runs.lock().unwrap().len();
    for node in nodes {
        node.shutdown(Duration::from_secs(5)).await;
    }
    let runs = runs.lock().unwrap().clone();
    let due_times: HashSet<DateTime<Utc>> = runs.iter().map(|(due, _)| *due).collect();
    assert_eq!(
        due_times.len(),
        runs.len(),
        "a due time ran twice: {runs:?}"
    );
    // About one run per second; a run held up past its successor's due time is coalesced
    // with it (the missed-run policy), so a loaded machine may see a few fewer.
    assert!(
        (17..=22).contains(&in_window),
        "{in_window} runs in 20 s: {runs:?}"
    );
    // Due times sit on the one-second grid from the first.
    let first = runs.iter().map(|(due, _)| *due).min().unwrap();
    for (due, _) in &runs {
        assert_eq!((*due - first).subsec_nanos(), 0, "{due} is off the grid");
    }
    eprintln!(
        "periodic ({:?}): {in_window} runs in 20 s on 3 nodes, by {} distinct nodes",
        db.backend,
        runs.iter().map(|(_, n)| n).collect::<HashSet<_>>().len()
    );

    let store = Store::new(db.conn.clone());
    let jobs = store.periodic_list().await.unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["queue.prune", "queue.rescue", "tick"]);
    let tick = &jobs[2];
    assert_eq!(tick.schedule, "every 1s");
    assert_eq!(tick.last_result.as_deref(), Some("ok"));
    assert!(tick.next_run_at > tick.last_due_at);
}

async fn due_times_missed_while_every_node_was_down_run_once(db: TestDatabase) {
    let runs = Runs::default();
    let first = node(&db, "node-a", &runs).await;
    wait_for_runs(&runs, 1).await;
    first.shutdown(Duration::from_secs(5)).await;
    let before = runs.lock().unwrap().len();
    assert!(before >= 1);

    // Four due times pass with no node up.
    tokio::time::sleep(Duration::from_millis(4_200)).await;
    let restarted = Utc::now();
    let second = node(&db, "node-b", &runs).await;
    // The catch-up run and one on schedule after it.
    wait_for_runs(&runs, before + 2).await;
    second.shutdown(Duration::from_secs(5)).await;
    let runs = runs.lock().unwrap().clone();
    // One catch-up run for the missed due times, not a burst of four; then the schedule.
    let caught_up = runs[before..]
        .iter()
        .filter(|(due, _)| *due < restarted)
        .count();
    assert_eq!(caught_up, 1, "{runs:?}");
    assert!(runs.len() > before + 1, "back on schedule: {runs:?}");
}

/// Waits until `runs` holds at least `count` runs: on a loaded machine a node's first pass
/// may come well after its start, so no fixed sleep would do.
async fn wait_for_runs(runs: &Runs, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while runs.lock().unwrap().len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "fewer than {count} runs within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
