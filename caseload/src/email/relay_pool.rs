//! Connections to the SMTP relay, opened with Nagle's algorithm off and kept between
//! messages.
//!
//! lettre writes a message's body and its closing `.` in two writes. Its own transport opens
//! sockets with Nagle's algorithm on, so the second write waits until the relay acknowledges
//! the first, and a relay that has nothing to answer yet delays that acknowledgement by up
//! to 40 ms: every message paid the wait, so eight in flight sent about 170 a second. These
//! are lettre's connections on sockets opened here with `TCP_NODELAY`.

use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::transport::smtp::response::Response;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, FuturesAsyncReadCompatExt};

/// Idle connections kept for the next messages; more are closed when handed back.
const IDLE_KEPT: usize = 16;

/// A connection idle for longer is asked `NOOP` before its next message: the relay may have
/// closed it meanwhile, and a message should not fail for that.
const CHECKED_AFTER_IDLE: Duration = Duration::from_secs(5);

/// How a connection is protected.
pub(super) enum RelayTls {
    None,
    StartTls(TlsParameters),
    Implicit(TlsParameters),
}

/// Why a message did not reach the relay.
#[derive(Debug)]
pub(super) enum RelayError {
    /// The relay answered with an error, or the SMTP session failed.
    Smtp(lettre::transport::smtp::Error),
    /// No connection to the relay.
    Connect(io::Error),
    /// The relay did not answer within the timeout.
    TimedOut(Duration),
}

/// The relay and its idle connections, shared by the mailer's clones.
pub(super) struct RelayPool {
    host: String,
    port: u16,
    timeout: Duration,
    tls: RelayTls,
    credentials: Option<Credentials>,
    hello: ClientId,
    idle: Mutex<Vec<(AsyncSmtpConnection, Instant)>>,
}

impl RelayPool {
    pub fn new(
        host: String,
        port: u16,
        timeout: Duration,
        tls: RelayTls,
        credentials: Option<Credentials>,
    ) -> Self {
        RelayPool {
            host,
            port,
            timeout,
            tls,
            credentials,
            hello: ClientId::default(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Sends one message over an idle connection or a new one; a connection the relay
    /// answered normally is kept for the next.
    pub async fn send(&self, envelope: &Envelope, message: &[u8]) -> Result<Response, RelayError> {
        let mut connection = self.connection().await?;
        let sent = tokio::time::timeout(self.timeout, connection.send(envelope, message)).await;
        match sent {
            Ok(result) => {
                if !connection.has_broken() {
                    self.keep(connection);
                }
                result.map_err(RelayError::Smtp)
            }
            Err(_) => Err(RelayError::TimedOut(self.timeout)),
        }
    }

    /// An idle connection still open, or a new one.
    async fn connection(&self) -> Result<AsyncSmtpConnection, RelayError> {
        loop {
            let idle = self.idle.lock().expect("the relay pool's lock").pop();
            let Some((mut connection, since)) = idle else {
                return self.connect().await;
            };
            if since.elapsed() < CHECKED_AFTER_IDLE {
                return Ok(connection);
            }
            let answered = tokio::time::timeout(self.timeout, connection.test_connected()).await;
            if matches!(answered, Ok(true)) {
                return Ok(connection);
            }
        }
    }

    fn keep(&self, connection: AsyncSmtpConnection) {
        let mut idle = self.idle.lock().expect("the relay pool's lock");
        if idle.len() < IDLE_KEPT {
            idle.push((connection, Instant::now()));
        }
    }

    /// Opens a connection: TCP without Nagle's algorithm, TLS as configured, `EHLO`, and
    /// `AUTH` when there is an account.
    async fn connect(&self) -> Result<AsyncSmtpConnection, RelayError> {
        let opened = tokio::time::timeout(self.timeout, self.session()).await;
        opened.unwrap_or(Err(RelayError::TimedOut(self.timeout)))
    }

    async fn session(&self) -> Result<AsyncSmtpConnection, RelayError> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(RelayError::Connect)?;
        tcp.set_nodelay(true).map_err(RelayError::Connect)?;
        let mut connection = match &self.tls {
            RelayTls::Implicit(parameters) => {
                let tls = encrypted(tcp, parameters.clone()).await?;
                AsyncSmtpConnection::connect_with_transport(Box::new(tls), &self.hello).await
            }
            RelayTls::None | RelayTls::StartTls(_) => {
                AsyncSmtpConnection::connect_with_transport(Box::new(tcp), &self.hello).await
            }
        }
        .map_err(RelayError::Smtp)?;
        if let RelayTls::StartTls(parameters) = &self.tls {
            connection
                .starttls(parameters.clone(), &self.hello)
                .await
                .map_err(RelayError::Smtp)?;
        }
        if let Some(credentials) = &self.credentials {
            connection
                .auth(&[Mechanism::Plain, Mechanism::Login], credentials)
                .await
                .map_err(RelayError::Smtp)?;
        }
        Ok(connection)
    }
}

/// A TLS session over `tcp` before any SMTP is spoken (port 465), through lettre's own TLS
/// stream so that certificates are checked exactly as for STARTTLS.
async fn encrypted(tcp: TcpStream, parameters: TlsParameters) -> Result<TlsStream, RelayError> {
    #[allow(deprecated)] // lettre's public way to put TLS on a socket it did not open
    let mut stream =
        lettre::transport::smtp::client::AsyncNetworkStream::use_existing_tokio1(Box::new(tcp));
    stream
        .upgrade_tls(parameters)
        .await
        .map_err(RelayError::Smtp)?;
    Ok(TlsStream(stream.compat()))
}

/// lettre's TLS stream as the tokio stream its connections are made over.
#[allow(deprecated)]
#[derive(Debug)]
struct TlsStream(Compat<lettre::transport::smtp::client::AsyncNetworkStream>);

impl AsyncTokioStream for TlsStream {
    fn peer_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.0.get_ref().peer_addr()
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
