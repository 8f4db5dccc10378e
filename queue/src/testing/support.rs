//! Factories and waiting helpers for tests of the queue and of crates built on it.

use std::future::Future;
use std::time::Duration;

use sea_orm::ConnectionTrait;
use tokio::sync::broadcast::{Receiver, error::TryRecvError};

use crate::runtime::RuntimeConfig;
use crate::task::QueueEvent;

/// A runtime configuration with short intervals, so rescues, heartbeats and sweeps happen
/// within a test's patience.
pub fn fast_config(system_id: &str) -> RuntimeConfig {
    RuntimeConfig {
        system_id: system_id.to_owned(),
        workers: 8,
        sweep_interval: Duration::from_millis(200),
        heartbeat_interval: Duration::from_millis(100),
        node_timeout: Duration::from_secs(2),
        rescue_interval: Duration::from_millis(200),
        cancel_grace: Duration::from_millis(500),
        ..RuntimeConfig::default()
    }
}

/// How long [`wait_until`] re-checks without an event: changes made through another `Store`
/// (another pool or process) produce no local event.
const RECHECK: Duration = Duration::from_millis(100);

/// Waits until `check` holds, re-checking after every batch of queue events (and at least
/// every 100 ms); panics after `limit`.
pub async fn wait_until(
    events: &mut Receiver<QueueEvent>,
    limit: Duration,
    what: &str,
    mut check: impl AsyncFnMut() -> bool,
) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting until {what}"
        );
        let _ = tokio::time::timeout(RECHECK, events.recv()).await;
        // Everything that arrived meanwhile is covered by the next check.
        while !matches!(
            events.try_recv(),
            Err(TryRecvError::Empty | TryRecvError::Closed)
        ) {}
    }
}

/// Creates `test_effect (task_id, item)`: the side effects test executors write, one row per
/// item processed, so tests can count that each happened exactly once.
pub async fn create_effect_table<C: ConnectionTrait>(conn: &C) {
    conn.execute_unprepared(
        "CREATE TABLE IF NOT EXISTS test_effect (task_id VARCHAR(36) NOT NULL, item BIGINT NOT NULL)",
    )
    .await
    .expect("create test_effect");
}

/// This process's peak resident set (`VmHWM` from /proc), in MiB; 0 where /proc does not
/// say. For the benchmarks' memory figures.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Starts [`peak_rss_mib`] afresh from the current resident set (Linux's `clear_refs`), so
/// a benchmark's setup (seeding, say) does not count; does nothing where /proc does not allow.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Runs `cleanup` to completion on a short-lived thread with a runtime of its own and waits
/// for it: for a `Drop` that must do async work, since it runs inside the test's runtime,
/// which cannot be blocked on.
pub fn block_on_aside(cleanup: impl Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build a runtime")
            .block_on(cleanup);
    })
    .join();
}
