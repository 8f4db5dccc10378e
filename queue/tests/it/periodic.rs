//! Periodic jobs across nodes: each due time runs once in the cluster, missed due times are
//! coalesced into one run, and the rescuer and pruner are periodic jobs too.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::testing::{TestDatabase, fast_config};
use queue::{PeriodicContext, PeriodicJob, PeriodicTask, Registry, Runtime, Schedule, Store};

queue::backend_tests!(queue::schema::QueueMigrator =>
    a_frequent_job_runs_once_per_due_time_on_three_nodes,
    due_times_missed_while_every_node_was_down_run_once,
    a_long_run_extends_its_lock_and_no_run_overlaps_it_on_three_nodes,
    lock_at_least_for_skips_the_due_times_soon_after_a_quick_run,
    admins_run_a_job_now_pause_it_and_resume_it,
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

/// How often the job `tick` is due: often, so a test sees many due times in little time.
const TICK: Duration = Duration::from_millis(250);

/// A node (its own connection pool) taking part in the job `tick`, due every [`TICK`].
async fn node(db: &TestDatabase, name: &str, runs: &Runs) -> queue::RuntimeHandle {
    let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
    let mut registry = Registry::new();
    registry.register_periodic(PeriodicJob::new(
        "tick",
        Schedule::Every(TICK),
        RecordRun(runs.clone()),
    ));
    Runtime::start(fast_config(name), store, registry)
        .await
        .unwrap()
}

/// Sixteen runs of a job on three nodes: no due time runs twice, and every due time sits on
/// the job's grid. The test waits for runs, not for a time, so a slow machine only makes it
/// slower (a run held up past its successor's due time is coalesced with it).
async fn a_frequent_job_runs_once_per_due_time_on_three_nodes(db: TestDatabase) {
    let runs = Runs::default();
    let mut nodes = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        nodes.push(node(&db, name, &runs).await);
    }
    wait_for_runs(&runs, 16).await;
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
    // Due times sit on the grid from the first.
    let first = runs.iter().map(|(due, _)| *due).min().unwrap();
    let step = chrono::Duration::from_std(TICK).unwrap();
    for (due, _) in &runs {
        assert_eq!(
            (*due - first).num_nanoseconds().unwrap() % step.num_nanoseconds().unwrap(),
            0,
            "{due} is off the grid"
        );
    }
    eprintln!(
        "periodic ({:?}): {} runs on 3 nodes, by {} distinct nodes",
        db.backend,
        runs.len(),
        runs.iter().map(|(_, n)| n).collect::<HashSet<_>>().len()
    );

    let store = Store::new(db.conn.clone());
    let jobs = store.periodic_list().await.unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["queue.prune", "queue.rescue", "tick"]);
    let tick = &jobs[2];
    assert_eq!(tick.schedule, "every 250ms");
    // The last word is a run's, or, on a machine slow enough that a peer reached a due
    // time while another node still held its lock, that peer's skip.
    assert!(
        matches!(
            tick.last_result.as_deref(),
            Some("ok" | "skipped: the lock was held")
        ),
        "{:?}",
        tick.last_result
    );
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
    tokio::time::sleep(TICK * 4 + TICK / 5).await;
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

/// Counts runs, and the most that were ever under way at once.
#[derive(Default)]
struct Overlap {
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    runs: std::sync::atomic::AtomicUsize,
    /// How long each run takes.
    takes: Duration,
}

/// An [`Overlap`] the test keeps reading while the nodes run the job.
struct Shared(Arc<Overlap>);

#[async_trait::async_trait]
impl PeriodicTask for Shared {
    async fn run(&self, _ctx: &PeriodicContext) -> Result<(), String> {
        use std::sync::atomic::Ordering::SeqCst;
        let this = &self.0;
        let now = this.running.fetch_add(1, SeqCst) + 1;
        this.most.fetch_max(now, SeqCst);
        tokio::time::sleep(this.takes).await;
        this.running.fetch_sub(1, SeqCst);
        this.runs.fetch_add(1, SeqCst);
        Ok(())
    }
}

/// Three nodes with the job `name` (due every second) made by `job`; each node's store.
async fn three_nodes(
    db: &TestDatabase,
    job: impl Fn() -> PeriodicJob,
) -> Vec<(Store, queue::RuntimeHandle)> {
    let mut nodes = Vec::new();
    for name in ["node-a", "node-b", "node-c"] {
        let store = Store::new(queue::database::connect(&db.url, 4).await.unwrap());
        let mut registry = Registry::new();
        registry.register_periodic(job());
        let handle = Runtime::start(fast_config(name), store.clone(), registry)
            .await
            .unwrap();
        nodes.push((store, handle));
    }
    nodes
}

/// The job's row, once a node has registered it: a runtime registers its jobs in the
/// background after it starts, so a test that looks at once may find none yet.
async fn job_row(db: &TestDatabase, name: &str) -> queue::PeriodicJobStatus {
    let store = Store::new(db.conn.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = store.periodic_list().await.unwrap();
        if let Some(job) = jobs.into_iter().find(|job| job.name == name) {
            return job;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a node registers the job {name} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A run lasting 5 s holds a lock taken for 2.4 s at a time: the runner extends it (every
/// 0.8 s), so the due times in between, on every node, find it held and are recorded as
/// skipped, never run beside it. An extension may come 1.6 s late before the lock lapses:
/// on a loaded machine a SQLite write queued behind the other suites has come a second late.
async fn a_long_run_extends_its_lock_and_no_run_overlaps_it_on_three_nodes(db: TestDatabase) {
    let overlap = Arc::new(Overlap {
        takes: Duration::from_millis(5_000),
        ..Overlap::default()
    });
    let job = || {
        PeriodicJob::new(
            "slow",
            Schedule::Every(Duration::from_secs(1)),
            Shared(overlap.clone()),
        )
        .with_lock_at_most_for(Duration::from_millis(2_400))
    };
    let nodes = three_nodes(&db, job).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while overlap.runs.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "two runs within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (_, node) in nodes {
        node.shutdown(Duration::from_secs(5)).await;
    }
    assert_eq!(
        overlap.most.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "runs overlapped"
    );
    let row = job_row(&db, "slow").await;
    assert!(row.skipped_runs >= 2, "{row:?}");
    assert!(row.last_skipped_at.is_some());
    assert_eq!(
        (row.lock_at_most_ms, row.lock_at_least_ms),
        (Some(2_400), Some(0))
    );
}

/// A quick job that keeps its lock 3.5 s after each start runs about every four due times
/// of its one-second schedule; the due times between are skipped, on whichever node.
async fn lock_at_least_for_skips_the_due_times_soon_after_a_quick_run(db: TestDatabase) {
    let overlap = Arc::new(Overlap::default());
    let job = || {
        PeriodicJob::new(
            "quick",
            Schedule::Every(Duration::from_secs(1)),
            Shared(overlap.clone()),
        )
        .with_lock_at_least_for(Duration::from_millis(3_500))
    };
    let nodes = three_nodes(&db, job).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while job_row(&db, "quick").await.skipped_runs < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "five skips within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (_, node) in nodes {
        node.shutdown(Duration::from_secs(5)).await;
    }
    let row = job_row(&db, "quick").await;
    let runs = overlap.runs.load(std::sync::atomic::Ordering::SeqCst) as i64;
    // Each run holds the lock over the next three due times (3.5 s), so at least three
    // skips per run but the last; a loaded machine may coalesce some due times.
    assert!(runs >= 2, "{runs} runs, {row:?}");
    assert!(row.skipped_runs >= 3 * (runs - 1), "{runs} runs, {row:?}");
    assert_eq!(row.lock_at_least_ms, Some(3_500));
}

/// An hourly job runs at its first due time, then again at once when an admin asks (which
/// overrides its ten minutes of lock-at-least); a paused job refuses "run now" and runs on
/// no node until resumed.
async fn admins_run_a_job_now_pause_it_and_resume_it(db: TestDatabase) {
    let overlap = Arc::new(Overlap::default());
    let job = || {
        PeriodicJob::new(
            "hourly",
            Schedule::Every(Duration::from_secs(3_600)),
            Shared(overlap.clone()),
        )
        .with_lock_at_least_for(Duration::from_secs(600))
    };
    let nodes = three_nodes(&db, job).await;
    let runs = || overlap.runs.load(std::sync::atomic::Ordering::SeqCst);
    let wait_for = async |count: usize| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while runs() < count {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{count} runs within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    wait_for(1).await;
    // "Run now" while a run is under way keeps that run's lock (and is recorded as
    // skipped), so ask once the first run has been recorded as finished.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while job_row(&db, "hourly").await.last_finished_at.is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "first run finished within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let admin = &nodes[1].0;
    assert!(admin.periodic_run_now("hourly").await.unwrap());
    wait_for(2).await;

    assert!(admin.periodic_set_paused("hourly", true).await.unwrap());
    assert!(
        !admin.periodic_set_paused("hourly", true).await.unwrap(),
        "already paused"
    );
    assert!(
        !admin.periodic_run_now("hourly").await.unwrap(),
        "paused jobs do not run now"
    );
    assert!(job_row(&db, "hourly").await.paused);
    assert!(admin.periodic_set_paused("hourly", false).await.unwrap());
    assert!(!admin.periodic_run_now("nonesuch").await.unwrap());
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (_, node) in nodes {
        node.shutdown(Duration::from_secs(5)).await;
    }
    assert_eq!(
        runs(),
        2,
        "resuming does not run an hourly job before its hour"
    );
    assert!(!job_row(&db, "hourly").await.paused);
}
