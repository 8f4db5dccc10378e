//! A minimal SMTP server on loopback for tests that speak real SMTP (feature `testing`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One message as the SMTP server received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub recipients: Vec<String>,
    pub data: String,
}

/// A minimal SMTP server on 127.0.0.1 (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT), enough for
/// lettre's client, that keeps what it receives and answers RCPT for chosen addresses with
/// chosen replies (to simulate bounces and deferrals).
#[derive(Clone)]
pub struct SmtpServer {
    pub port: u16,
    /// Whether accepted messages are kept for [`SmtpServer::received`] or only counted.
    keeps_messages: bool,
    received: Arc<Mutex<Vec<Received>>>,
    accepted: Arc<AtomicU64>,
    sessions: Arc<AtomicU64>,
    replies: Arc<Mutex<HashMap<String, String>>>,
}

impl SmtpServer {
    /// A server that keeps every message it accepts.
    pub async fn start() -> Self {
        Self::listen(true).await
    }

    /// A server that only counts the messages it accepts: a relay for benchmarks of many
    /// thousand messages, whose memory would otherwise be the messages'.
    pub async fn start_counting() -> Self {
        Self::listen(false).await
    }

    async fn listen(keeps_messages: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = SmtpServer {
            port: listener.local_addr().unwrap().port(),
            keeps_messages,
            received: Arc::default(),
            accepted: Arc::default(),
            sessions: Arc::default(),
            replies: Arc::default(),
        };
        let accepting = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accepting.sessions.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(accepting.clone().session(stream));
            }
        });
        server
    }

    /// Answers `RCPT TO:<address>` with `reply` (e.g. `550 5.1.1 no such user`) from now on.
    pub fn reply_to_rcpt(&self, address: &str, reply: &str) {
        self.replies
            .lock()
            .unwrap()
            .insert(address.to_owned(), reply.to_owned());
    }

    /// Accepts every recipient again.
    pub fn accept_all(&self) {
        self.replies.lock().unwrap().clear();
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// How many connections clients have opened.
    pub fn sessions(&self) -> u64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// How many messages the server has accepted.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    async fn session(self, stream: TcpStream) {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut recipients = Vec::new();
        let _ = write.write_all(b"220 localhost test SMTP\r\n").await;
        while let Ok(Some(line)) = lines.next_line().await {
            let upper = line.to_ascii_uppercase();
            let reply = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
                "250-localhost\r\n250-8BITMIME\r\n250 SMTPUTF8".to_owned()
            } else if upper.starts_with("MAIL FROM") || upper.starts_with("RSET") {
                recipients.clear();
                "250 OK".to_owned()
            } else if upper.starts_with("RCPT TO") {
                let address = line
                    .split_once('<')
                    .and_then(|(_, rest)| rest.split_once('>'))
                    .map(|(address, _)| address.to_owned())
                    .unwrap_or_default();
                let rule = self.replies.lock().unwrap().get(&address).cloned();
                rule.unwrap_or_else(|| {
                    recipients.push(address);
                    "250 OK".to_owned()
                })
            } else if upper.starts_with("DATA") {
                let _ = write.write_all(b"354 go ahead\r\n").await;
                let mut data = String::new();
                let mut complete = false;
                while let Ok(Some(line)) = lines.next_line().await {
                    if line == "." {
                        complete = true;
                        break;
                    }
                    data.push_str(line.strip_prefix('.').unwrap_or(&line));
                    data.push('\n');
                }
                // A message cut off before its final "." was never accepted, as a real relay
                // would discard it.
                if !complete {
                    return;
                }
                self.accepted.fetch_add(1, Ordering::Relaxed);
                if self.keeps_messages {
                    self.received.lock().unwrap().push(Received {
                        recipients: std::mem::take(&mut recipients),
                        data,
                    });
                }
                "250 queued".to_owned()
            } else if upper.starts_with("QUIT") {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            } else {
                "250 OK".to_owned()
            };
            if write
                .write_all(format!("{reply}\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    }
}
