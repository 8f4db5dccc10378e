//! Real `bulkq serve` processes, for the tests that kill, stop and race whole nodes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
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

    /// A file `name` in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Starts `bulkq serve` on `database_url` as `system_id`, on a loopback port of its own,
    /// with `extra_args`; the node is SIGKILLed if dropped (a failing test).
    pub fn start_node(&self, database_url: &str, system_id: &str, extra_args: &[&str]) -> Child {
        self.command(database_url, system_id, extra_args)
            .stdout(Stdio::null())
            .spawn()
            .expect("start the bulkq node")
    }

    /// [`ScratchDir::start_node`] for each of `names`.
    pub fn start_nodes<S: AsRef<str>>(
        &self,
        database_url: &str,
        names: &[S],
        extra_args: &[&str],
    ) -> Vec<Child> {
        names
            .iter()
            .map(|name| self.start_node(database_url, name.as_ref(), extra_args))
            .collect()
    }

    /// [`ScratchDir::start_node`], and where the node listens, once it does.
    pub async fn start_listening_node(
        &self,
        database_url: &str,
        system_id: &str,
        extra_args: &[&str],
    ) -> (Child, SocketAddr) {
        let mut node = self
            .command(database_url, system_id, extra_args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the bulkq node");
        let stdout = node.stdout.take().expect("the node's output is piped");
        let mut lines = BufReader::new(stdout).lines();
        while let Some(line) = lines.next_line().await.expect("read the node's output") {
            if let Some(address) = line.trim().strip_prefix("bulkq is running at http://") {
                let address = address.parse().expect("an address");
                // Whatever it writes later must not fill the pipe and stall it.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                return (node, address);
            }
        }
        panic!("the node ended without saying where it listens");
    }

    fn command(&self, database_url: &str, system_id: &str, extra_args: &[&str]) -> Command {
        let dir = |name: &str| self.0.join(name).display().to_string();
        let mut command = Command::new(env!("CARGO_BIN_EXE_bulkq"));
        command
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
            .kill_on_drop(true);
        command
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

/// Runs `bulkq` with `args`; whether it succeeded, and what it said on both outputs.
pub async fn bulkq(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_bulkq"))
        .args(args)
        .env("BULKQ_LOG", "warn")
        .output()
        .await
        .expect("run bulkq");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}
