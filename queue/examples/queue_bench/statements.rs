//! The drain's baseline in the database: the store's claim and completion statements alone,
//! with no runtime, executor or child process around them.
//!
//! A drain costs the database one claim and one batch of completions per claimed batch;
//! everything else a node does (handing tasks to its workers, collecting outcomes, waking,
//! heartbeats) is the engine's. Running the two statements back to back, from as many
//! streams as a drain's nodes keep busy, gives the rate the database sustains on its own
//! on this machine, so the engine's drain can be read as a share of it: what a faster
//! engine could still gain, and what only a cheaper claim or completion could.

use std::time::{Duration, Instant};

use chrono::Utc;
use queue::{Finish, Store, TaskGetAvailableParams};

type Error = Box<dyn std::error::Error>;

/// How many tasks each claim asks for: the backend's default prefetch, what a busy node
/// claims.
fn claim_size(store: &Store) -> u32 {
    u32::try_from(queue::runtime::prefetch_default(store.backend())).unwrap_or(u32::MAX)
}

/// Claims and completes every queued task from `streams` concurrent loops, each claiming
/// [`claim_size`] tasks and completing them in one call until nothing is left; returns how many
/// tasks were completed and how long that took.
pub async fn drain(store: &Store, streams: usize) -> Result<(usize, Duration), Error> {
    let started = Instant::now();
    let mut loops = tokio::task::JoinSet::new();
    for stream in 0..streams {
        let store = store.clone();
        loops.spawn(
            async move { claim_and_complete(&store, &format!("statements-{stream}")).await },
        );
    }
    let mut completed = 0;
    while let Some(done) = loops.join_next().await {
        completed += done??;
    }
    Ok((completed, started.elapsed()))
}

/// One stream: claim, complete, repeat until a claim comes back empty.
async fn claim_and_complete(store: &Store, node_id: &str) -> Result<usize, queue::QueueError> {
    let mut completed = 0;
    loop {
        let claimed = store
            .task_get_available(TaskGetAvailableParams {
                max: claim_size(store),
                now: Utc::now(),
                node_id,
                take_turns: true,
                on_node: &[],
            })
            .await?;
        if claimed.is_empty() {
            return Ok(completed);
        }
        let finishes: Vec<Finish> = claimed.iter().map(Finish::complete).collect();
        completed += store
            .task_finish_many_if_running(&finishes, Utc::now(), node_id)
            .await?
            .len();
    }
}
