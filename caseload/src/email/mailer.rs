//! The mailer: one message per recipient, over an SMTP relay (plain, STARTTLS or implicit
//! TLS, with AUTH) or into an outbox directory, and what became of each send.

use std::error::Error as _;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, TlsParameters};
use lettre::{AsyncFileTransport, AsyncTransport, Message, Tokio1Executor};

use super::relay_pool::{RelayError, RelayPool, RelayTls};
use super::send_rate::SendRate;
use super::{Delivery, EmailContent, Recipient};
use crate::CaseloadError;

/// Where messages go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailTransport {
    /// An SMTP relay, with a connection pool.
    Smtp(SmtpRelay),
    /// One `.eml` file per message in this directory (development default: `data/outbox`).
    Outbox(PathBuf),
}

/// The development default: files in `data/outbox/`, so nothing leaves the machine.
impl Default for MailTransport {
    fn default() -> Self {
        MailTransport::Outbox(PathBuf::from("data/outbox"))
    }
}

/// An SMTP relay and how to speak to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpRelay {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    /// AUTH PLAIN or LOGIN with these, offered only once the connection is encrypted.
    pub credentials: Option<SmtpCredentials>,
    /// Certificate authorities (PEM) trusted beside the system's, e.g. an organisation's own.
    pub extra_ca_pem: Option<Vec<u8>>,
    /// How long one SMTP command may take before the send counts as transient failure.
    pub timeout: Duration,
}

impl SmtpRelay {
    /// A relay spoken to in plain SMTP without authentication (a local MTA or a smarthost on
    /// a trusted network).
    pub fn plain(host: impl Into<String>, port: u16, timeout: Duration) -> Self {
        SmtpRelay {
            host: host.into(),
            port,
            security: SmtpSecurity::Plain,
            credentials: None,
            extra_ca_pem: None,
            timeout,
        }
    }
}

/// How the connection to the relay is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpSecurity {
    /// No TLS: only for a relay on the same machine or a trusted network.
    Plain,
    /// Plain SMTP upgraded with STARTTLS, which the relay must offer (port 587).
    StartTls,
    /// TLS from the first byte (port 465).
    ImplicitTls,
}

/// A relay account. The password never appears in `Debug` output or logs.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpCredentials {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for SmtpCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpCredentials")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Sends the messages of bulk email tasks.
#[derive(Clone)]
pub struct Mailer {
    from: Mailbox,
    transport: Transport,
    /// The relay's cluster-wide rate, if it has one.
    rate: Option<Arc<SendRate>>,
}

#[derive(Clone)]
enum Transport {
    Smtp(Arc<RelayPool>),
    Outbox(AsyncFileTransport<Tokio1Executor>),
}

impl Mailer {
    /// A mailer sending as `from` over `transport` (the outbox directory is created).
    pub fn new(from: &str, transport: &MailTransport) -> Result<Self, CaseloadError> {
        let from = from
            .parse()
            .map_err(|_| CaseloadError::Invalid(format!("{from:?} is not an email address")))?;
        let transport = match transport {
            MailTransport::Smtp(relay) => Transport::Smtp(Arc::new(relay_pool(relay)?)),
            MailTransport::Outbox(dir) => {
                std::fs::create_dir_all(dir)?;
                Transport::Outbox(AsyncFileTransport::new(dir))
            }
        };
        Ok(Mailer {
            from,
            transport,
            rate: None,
        })
    }

    /// The same mailer, sending through the relay no faster than `rate` allows.
    pub fn with_rate(mut self, rate: SendRate) -> Self {
        self.rate = Some(Arc::new(rate));
        self
    }

    /// Sends one message to `recipient`, copied to the content's cc addresses.
    pub async fn send(&self, recipient: &Recipient, content: &EmailContent) -> Delivery {
        self.send_to(&recipient.name, &recipient.address, content)
            .await
    }

    /// Sends one message to `name` at `address`, copied to the content's cc addresses.
    pub async fn send_to(&self, name: &str, address: &str, content: &EmailContent) -> Delivery {
        let message = match self.compose(name, address, content) {
            Ok(message) => message,
            Err(detail) => return Delivery::Permanent(detail),
        };
        match &self.transport {
            Transport::Smtp(smtp) => {
                if let Some(rate) = &self.rate
                    && let Err(error) = rate.acquire().await
                {
                    return Delivery::Transient(format!("the relay's send rate: {error}"));
                }
                match smtp.send(message.envelope(), &message.formatted()).await {
                    Ok(_) => Delivery::Sent,
                    Err(RelayError::Smtp(error)) => classify(&error),
                    Err(RelayError::Connect(error)) => {
                        Delivery::Transient(format!("no connection to the relay: {error}"))
                    }
                    Err(RelayError::TimedOut(timeout)) => Delivery::Transient(format!(
                        "the relay did not answer within {} s",
                        timeout.as_secs_f64()
                    )),
                }
            }
            Transport::Outbox(outbox) => match outbox.send(message).await {
                Ok(_) => Delivery::Sent,
                Err(error) => Delivery::Transient(error.to_string()),
            },
        }
    }

    fn compose(
        &self,
        name: &str,
        address: &str,
        content: &EmailContent,
    ) -> Result<Message, String> {
        let mailbox = address
            .parse()
            .map_err(|_| format!("{address:?} is not a usable address"))?;
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(Mailbox::new(Some(name.to_owned()), mailbox))
            .subject(content.subject.trim())
            .header(ContentType::TEXT_PLAIN);
        for cc in content.cc_mailboxes().map_err(|e| e.to_string())? {
            builder = builder.cc(cc);
        }
        builder
            .body(content.body.clone())
            .map_err(|e| e.to_string())
    }
}

/// The connections to `relay`, verifying its certificate against the system's authorities
/// and `extra_ca_pem`.
fn relay_pool(relay: &SmtpRelay) -> Result<RelayPool, CaseloadError> {
    let invalid = |what: &str, error: &dyn fmt::Display| {
        CaseloadError::Invalid(format!("SMTP relay {}: {what}: {error}", relay.host))
    };
    let tls_parameters = || -> Result<TlsParameters, CaseloadError> {
        let mut parameters = TlsParameters::builder(relay.host.clone());
        if let Some(pem) = &relay.extra_ca_pem {
            let certificate = Certificate::from_pem(pem)
                .map_err(|e| invalid("the extra CA file is not a PEM certificate", &e))?;
            parameters = parameters.add_root_certificate(certificate);
        }
        parameters
            .build_rustls()
            .map_err(|e| invalid("TLS settings", &e))
    };
    let tls = match relay.security {
        SmtpSecurity::Plain => RelayTls::None,
        SmtpSecurity::StartTls => RelayTls::StartTls(tls_parameters()?),
        SmtpSecurity::ImplicitTls => RelayTls::Implicit(tls_parameters()?),
    };
    let credentials = relay
        .credentials
        .as_ref()
        .map(|account| Credentials::new(account.user.clone(), account.password.clone()));
    Ok(RelayPool::new(
        relay.host.clone(),
        relay.port,
        relay.timeout,
        tls,
        credentials,
    ))
}

/// What a failed send means: the recipient's bounce (5xx) or deferral (4xx, timeouts, lost
/// connections), or the relay refusing us whoever the recipient (credentials, TLS), which no
/// retry of this task will change.
fn classify(error: &lettre::transport::smtp::Error) -> Delivery {
    const REFUSED_CREDENTIALS: [&str; 4] = ["530", "534", "535", "538"];
    if error.is_tls() || tls_failure(error) {
        return Delivery::RelayRefused(format!("no trusted TLS connection to the relay: {error}"));
    }
    if error.is_client() {
        return Delivery::RelayRefused(format!("the relay cannot be used as configured: {error}"));
    }
    let code = error.status().map(|code| code.to_string());
    if code.is_some_and(|code| REFUSED_CREDENTIALS.contains(&code.as_str())) {
        return Delivery::RelayRefused(format!("the relay refused our credentials: {error}"));
    }
    if error.is_permanent() {
        Delivery::Permanent(error.to_string())
    } else {
        Delivery::Transient(error.to_string())
    }
}

/// Whether a TLS handshake failed (an untrusted or mismatched certificate, no common
/// protocol): lettre reports it as a connection error carrying rustls's error.
fn tls_failure(error: &lettre::transport::smtp::Error) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause.is::<rustls::Error>() {
            return true;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io
                .get_ref()
                .is_some_and(|inner| inner.is::<rustls::Error>())
        {
            return true;
        }
        source = cause.source();
    }
    false
}
