//! The threads the task queue runs on, at a lower CPU priority than the dashboard's.
//!
//! On a node's few cores, bulk work would otherwise take an even share of the CPU from the
//! person waiting on a page or a password check, and that person's request would wait in
//! the scheduler's queue behind the batches. With the queue's threads "niced", the kernel
//! runs a request first and the queue takes every cycle people leave (ADR 0033). The
//! priority passes on to every thread the queue starts: on SQLite each of its database
//! connections is a thread of its own, opened by the queue's threads.

use std::future::Future;

use anyhow::Context;
use tokio::runtime::Runtime;

/// The queue's own tokio runtime. Dropping it stops whatever still runs on it, at once.
pub struct QueueThreads {
    runtime: Option<Runtime>,
}

impl QueueThreads {
    /// Starts the runtime, its threads `nice` steps below the caller's priority (0: the
    /// same). A priority the system refuses is logged; the threads then run at the caller's.
    pub fn start(nice: u8) -> anyhow::Result<Self> {
        // Each thread is set to the caller's value plus `nice`, not its own plus `nice`: a
        // thread the runtime starts from one of its own already has the lowered value.
        let lowered = callers_nice()
            .saturating_add(i32::from(nice))
            .min(LOWEST_PRIORITY);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .thread_name("bulkq-queue")
            .enable_all()
            .on_thread_start(move || set_this_threads_nice(lowered))
            .build()
            .context("starting the task queue's threads")?;
        Ok(QueueThreads {
            runtime: Some(runtime),
        })
    }

    /// Runs `work` on the queue's threads; what it spawns stays there.
    pub async fn run<F>(&self, work: F) -> anyhow::Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime = self
            .runtime
            .as_ref()
            .context("the task queue's threads have stopped")?;
        runtime
            .spawn(work)
            .await
            .context("work on the task queue's threads panicked")
    }
}

impl Drop for QueueThreads {
    /// Without waiting: a runtime dropped the ordinary way blocks, which an async caller
    /// must not do.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The largest nice value: the lowest priority.
const LOWEST_PRIORITY: i32 = 19;

/// The calling thread's nice value (Linux keeps one per thread); 0 elsewhere.
fn callers_nice() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` cannot fail and `getpriority` only reads this thread's own value.
    unsafe {
        libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Sets the calling thread's nice value to `nice`, if it is not that already.
fn set_this_threads_nice(nice: i32) {
    if callers_nice() == nice {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `setpriority` on this thread's own id changes only its scheduling weight, and
    // a lower priority than the caller's needs no privilege.
    unsafe {
        let thread = libc::gettid() as libc::id_t;
        if libc::setpriority(libc::PRIO_PROCESS, thread, nice) != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!(%error, "could not lower the task queue's CPU priority");
        }
    }
    #[cfg(not(target_os = "linux"))]
    tracing::debug!(nice, "thread priorities are only lowered on Linux");
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_queue_and_the_threads_it_starts_run_at_a_lower_priority() {
        let ours = callers_nice();
        let threads = QueueThreads::start(5).unwrap();
        let on_runtime = threads.run(async { callers_nice() }).await.unwrap();
        let blocking = threads
            .run(async { tokio::task::spawn_blocking(callers_nice).await.unwrap() })
            .await
            .unwrap();
        let started = threads
            .run(async { std::thread::spawn(callers_nice).join().unwrap() })
            .await
            .unwrap();
        let expected = (ours + 5).min(LOWEST_PRIORITY);
        assert_eq!(
            (on_runtime, blocking, started),
            (expected, expected, expected)
        );
        assert_eq!(callers_nice(), ours, "the caller keeps its priority");
    }

    #[tokio::test]
    async fn nice_zero_keeps_the_callers_priority() {
        let ours = callers_nice();
        let threads = QueueThreads::start(0).unwrap();
        assert_eq!(threads.run(async { callers_nice() }).await.unwrap(), ours);
    }
}
