//! `GET /metrics`: the node's figures in the Prometheus text format.
//!
//! The queue records claims, attempt outcomes, rescues, execution and queue-wait times and
//! slots in use through the `metrics` facade (`queue::metrics`); this module installs the
//! Prometheus recorder that keeps them, and at each scrape adds the tasks in the database by
//! status and component (rows, so counted then: one GROUP BY over the task table) and how
//! long the oldest due task has waited. The HTTP answers are counted by [`http_metrics`],
//! and `bulkq_build_info` names the running version. Like
//! `/healthz` it needs no sign-in, so a scraper can read it; it holds counts and timings,
//! nothing about people.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics::{describe_gauge, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use queue::Store;

/// Histogram buckets (seconds) for execution and queue-wait times: from a no-op task's
/// millisecond to a bulk action's quarter of an hour.
const SECONDS_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0, 900.0,
];

/// How often the recorder's histogram samples are folded into their buckets. The recorder
/// keeps every recorded sample until then, or until a scrape renders them: a node nobody
/// scrapes would otherwise hold two samples for every task it ever ran (execution time and
/// queue wait), growing for as long as it runs. The exporter's own default interval.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Names the running build (its version as a label).
const BUILD_INFO: &str = "bulkq_build_info";
/// The queue's backlog age, at each scrape.
const OLDEST_DUE_WAIT: &str = "bulkq_queue_oldest_due_wait_seconds";

/// The process's recorder: installed once, by the first router built (tests build many).
static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The `(status, component)` pairs set at the previous scrape: a pair that has no tasks any
/// more must read 0, not its last count.
static TASK_LABELS: Mutex<Option<HashSet<(String, String)>>> = Mutex::new(None);

/// Installs the Prometheus recorder if this process has none yet; `None` if another
/// recorder was installed first (then `/metrics` answers 503).
pub fn recorder() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &SECONDS_BUCKETS)
                .and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    queue::metrics::describe();
                    crate::http_metrics::describe();
                    describe_gauge!(BUILD_INFO, "Always 1; its version label is the build's");
                    describe_gauge!(
                        OLDEST_DUE_WAIT,
                        "How long the oldest due task has waited to be claimed (0: none waits)"
                    );
                    gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
                    keep_up(handle.clone(), UPKEEP_INTERVAL);
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "no Prometheus recorder: /metrics is off");
                    None
                }
            }
        })
        .as_ref()
}

/// Runs the recorder's upkeep every `interval`, for the life of the process, on a thread of
/// its own: `install_recorder` leaves upkeep to the caller, and the recorder outlives any
/// one async runtime (tests start one per test).
fn keep_up(handle: PrometheusHandle, interval: Duration) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                handle.run_upkeep();
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "no metrics upkeep: histogram samples wait for a scrape");
    }
}

/// The handler.
pub async fn metrics(store: Store) -> Response {
    let Some(recorder) = recorder() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "metrics are off").into_response();
    };
    match store.task_count_by_status().await {
        Ok(counts) => {
            let current: HashSet<(String, String)> = counts
                .iter()
                .map(|count| (count.status.as_str().to_owned(), count.component.clone()))
                .collect();
            for count in counts {
                gauge!(queue::metrics::TASKS, "status" => count.status.as_str(), "component" => count.component)
                    .set(count.count as f64);
            }
            let mut previous = TASK_LABELS.lock().unwrap_or_else(|e| e.into_inner());
            for (status, component) in previous.iter().flatten() {
                if !current.contains(&(status.clone(), component.clone())) {
                    gauge!(queue::metrics::TASKS, "status" => status.clone(), "component" => component.clone())
                        .set(0.0);
                }
            }
            *previous = Some(current);
        }
        // The recorder's own figures are still worth serving.
        Err(error) => tracing::warn!(%error, "/metrics: counting tasks failed"),
    }
    let now = store.clock().now();
    match store.task_oldest_due(now).await {
        Ok(oldest) => {
            let waited = oldest.map_or(0.0, |due| (now - due).as_seconds_f64().max(0.0));
            gauge!(OLDEST_DUE_WAIT).set(waited);
        }
        Err(error) => tracing::warn!(%error, "/metrics: finding the oldest due task failed"),
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        recorder.render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use metrics_exporter_prometheus::PrometheusBuilder;
    use queue::testing::peak_rss_mib;

    /// Samples recorded between two upkeeps: 20 rounds of this many, about 16 bytes each in
    /// the recorder, are over 300 MB if nothing folds them into buckets.
    const SAMPLES_PER_ROUND: usize = 1_000_000;

    /// A recorder nobody scrapes does not keep its histogram samples: with upkeep every 50
    /// ms the process's peak grows by a few rounds' worth, without it by all 20, over 300
    /// MB (checked: without `keep_up` this fails). The bound is half of that, so an upkeep
    /// thread starved for several rounds on a loaded machine still passes.
    #[test]
    fn upkeep_keeps_unscraped_histogram_samples_from_piling_up() {
        let recorder = PrometheusBuilder::new().build_recorder();
        super::keep_up(recorder.handle(), Duration::from_millis(50));
        let before = peak_rss_mib();
        metrics::with_local_recorder(&recorder, || {
            let histogram = metrics::histogram!("test_upkeep_seconds");
            for _ in 0..20 {
                for _ in 0..SAMPLES_PER_ROUND {
                    histogram.record(0.001);
                }
                std::thread::sleep(Duration::from_millis(120));
            }
        });
        let grown = peak_rss_mib() - before;
        assert!(
            grown < 160.0,
            "the peak RSS grew by {grown:.0} MiB while recording 20 million samples"
        );
    }
}
