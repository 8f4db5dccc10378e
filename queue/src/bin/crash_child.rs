//! The victim of the checkpoint crash test: runs a queue node with the slow
//! [`queue::testing::ItemsExecutor`] until the test kills it with SIGKILL.
//!
//! Usage: `queue-crash-child <database url> <system id>`.

use std::time::Duration;

use queue::testing::{ItemsExecutor, fast_config};
use queue::{Registry, Runtime, Store};

/// Slow enough that the test can kill the node with about half the items done.
const PAUSE_PER_BATCH: Duration = Duration::from_millis(40);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(system_id)) = (args.next(), args.next()) else {
        return Err("usage: queue-crash-child <database url> <system id>".into());
    };
    let db = queue::database::connect(&url, 4).await?;
    let mut registry = Registry::new();
    registry.register(
        "test.items",
        ItemsExecutor {
            pause: PAUSE_PER_BATCH,
        },
    );
    let _runtime = Runtime::start(fast_config(&system_id), Store::new(db), registry).await?;
    // Run until killed.
    std::future::pending::<()>().await;
    Ok(())
}
