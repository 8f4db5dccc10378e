//! Real `bulkq serve` processes, for the tests that kill, stop and race whole nodes.

use std::path::PathBuf;
use std::process::Stdio;

use tokio::process::{Child, Command};
use uuid::Uuid;

/// The nodes' shared directories (exports, outbox, an empty site), removed when the test
/// ends; nodes of one test share them as a cluster shares a volume.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(format!("bulkq-nodes-{}", Uuid::new_v4().simple()));
        // An empty `pkg/` keeps the node from warning, at every start, that no site is built.
        std::fs::create_dir_all(path.join("site/pkg")).expect("create the scratch directory");
        ScratchDir(path)
    }

    /// Starts `bulkq serve` on `database_url` as `system_id`, on a loopback port of its own,
    /// with `extra_args`; the node is SIGKILLed if dropped (a failing test). Its standard
    /// output (one line: where it listens) is piped.
    pub fn start_node(&self, database_url: &str, system_id: &str, extra_args: &[&str]) -> Child {
        let dir = |name: &str| self.0.join(name).display().to_string();
        Command::new(env!("CARGO_BIN_EXE_bulkq"))
            .args(["serve", "--database-url", database_url])
            .args(["--listen", "127.0.0.1:0", "--system-id", system_id])
            .args([
                "--exports-dir",
                &dir("exports"),
                "--outbox-dir",
                &dir("outbox"),
            ])
            .args(["--site-root", &dir("site")])
            .args(extra_args)
            .env("BULKQ_LOG", "warn")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the bulkq node")
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// SIGKILLs the node and reaps it.
pub async fn kill(node: &mut Child) {
    node.start_kill().expect("SIGKILL the node");
    node.wait().await.expect("reap the node");
}

/// Sends the node SIGTERM, the signal of an orderly shutdown.
pub async fn terminate(node: &Child) {
    let pid = node.id().expect("the node is running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("run kill");
    assert!(status.success(), "SIGTERM the node");
}
