//! A real SMTP relay that speaks TLS and requires AUTH, for tests of the relay settings:
//! aiosmtpd from PyPI (installed by `scripts/install-tools.sh test` into `.tools/aiosmtpd`),
//! run as a child process with a throwaway certificate.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

/// How the relay expects TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayTls {
    /// Plain SMTP that must be upgraded with STARTTLS before AUTH and mail.
    StartTls,
    /// TLS from the first byte.
    Implicit,
}

/// One message as the relay accepted it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Relayed {
    /// The envelope recipients.
    pub to: Vec<String>,
    /// The account that sent it.
    pub user: Option<String>,
    pub data: String,
}

/// A running relay on 127.0.0.1 (stopped when dropped). Only `user` with `password` may send.
pub struct TlsRelay {
    pub port: u16,
    /// The relay's self-signed certificate (PEM), trusted by nobody unless given it.
    pub certificate_pem: Vec<u8>,
    dir: TempDir,
    child: Child,
}

impl TlsRelay {
    /// Starts a relay, or panics saying how to install it.
    pub fn start(tls: RelayTls, user: &str, password: &str) -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let python = root.join(".tools/aiosmtpd/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/install-tools.sh test",
            python.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let password_file = dir.path().join("password");
        std::fs::write(&password_file, password).unwrap();
        let mode = match tls {
            RelayTls::StartTls => "starttls",
            RelayTls::Implicit => "implicit",
        };
        let mut child = Command::new(python)
            .arg(root.join("caseload/src/testing/tls_relay.py"))
            .args(["--mode", mode, "--user", user])
            .arg("--dir")
            .arg(dir.path())
            .arg("--password-file")
            .arg(&password_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the test relay");
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first_line)
            .unwrap();
        let port = first_line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the test relay did not start: {first_line:?}"));
        let certificate_pem = std::fs::read(dir.path().join("cert.pem")).unwrap();
        TlsRelay {
            port,
            certificate_pem,
            dir,
            child,
        }
    }

    /// The AUTH attempts refused so far.
    pub fn refused_logins(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("refused.jsonl"))
            .map_or(0, |text| text.lines().count())
    }

    /// The messages accepted so far.
    pub fn received(&self) -> Vec<Relayed> {
        match std::fs::read_to_string(self.dir.path().join("mailbox.jsonl")) {
            Ok(text) => text
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for TlsRelay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
