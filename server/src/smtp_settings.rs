//! The mail relay settings of `serve`: the relay's address or URL, and its password, which
//! comes from the environment or a file, never from a flag value (flags show in `ps`).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, bail};
use caseload::email::{MailTransport, SmtpCredentials, SmtpRelay, SmtpSecurity};

/// The environment variable holding the password of the relay account in `--smtp-url`.
pub const PASSWORD_ENV: &str = "BULKQ_SMTP_PASSWORD";

/// A plain relay's address, `host:port` (`--smtp-relay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayAddress {
    pub host: String,
    pub port: u16,
}

impl FromStr for RelayAddress {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let (host, port) = value
            .rsplit_once(':')
            .ok_or_else(|| format!("{value:?} is not host:port"))?;
        let port = port
            .parse()
            .map_err(|_| format!("{port:?} is not a port number"))?;
        if host.is_empty() {
            return Err(format!("{value:?} names no host"));
        }
        Ok(RelayAddress {
            host: host.to_owned(),
            port,
        })
    }
}

/// A TLS relay (`--smtp-url`): `smtps://[USER@]HOST[:PORT]` for TLS from the first byte
/// (port 465) or `smtp://[USER@]HOST[:PORT]` for STARTTLS (port 587).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayUrl {
    pub host: String,
    pub port: u16,
    pub security: SmtpSecurity,
    /// The account to sign in as (percent-decoded), if any.
    pub user: Option<String>,
}

impl FromStr for RelayUrl {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let url = url::Url::parse(value).map_err(|e| format!("{value:?} is not a URL: {e}"))?;
        let (security, default_port) = match url.scheme() {
            "smtps" => (SmtpSecurity::ImplicitTls, 465),
            "smtp" => (SmtpSecurity::StartTls, 587),
            other => {
                return Err(format!(
                    "scheme {other:?}: use smtps:// (TLS) or smtp:// (STARTTLS)"
                ));
            }
        };
        if url.password().is_some() {
            return Err(format!(
                "put the password in {PASSWORD_ENV} or --smtp-password-file, not in the URL"
            ));
        }
        let host = match url.host_str() {
            Some(host) if !host.is_empty() => host.trim_matches(['[', ']']).to_owned(),
            _ => return Err(format!("{value:?} names no host")),
        };
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(format!("{value:?}: only [USER@]HOST[:PORT] is understood"));
        }
        let user = match url.username() {
            "" => None,
            user => Some(
                percent_encoding::percent_decode_str(user)
                    .decode_utf8()
                    .map_err(|_| "the user name is not UTF-8".to_owned())?
                    .into_owned(),
            ),
        };
        Ok(RelayUrl {
            host,
            port: url.port().unwrap_or(default_port),
            security,
            user,
        })
    }
}

/// Where this node's mail goes, from its flags: a TLS relay, a plain relay, or the outbox.
/// `password_env` is the value of [`PASSWORD_ENV`], if set.
pub struct MailSettings<'a> {
    pub relay_url: Option<&'a RelayUrl>,
    pub relay_address: Option<&'a RelayAddress>,
    pub password_file: Option<&'a Path>,
    pub password_env: Option<String>,
    pub ca_file: Option<&'a Path>,
    pub timeout: Duration,
    pub outbox_dir: &'a Path,
}

impl MailSettings<'_> {
    /// The transport these settings describe, or why they do not describe one.
    pub fn transport(self) -> anyhow::Result<MailTransport> {
        let Some(url) = self.relay_url else {
            if self.password_file.is_some() || self.password_env.is_some() || self.ca_file.is_some()
            {
                bail!(
                    "an SMTP password or CA file is set but no --smtp-url (BULKQ_SMTP_URL) uses it"
                );
            }
            return Ok(match self.relay_address {
                Some(relay) => {
                    MailTransport::Smtp(SmtpRelay::plain(&relay.host, relay.port, self.timeout))
                }
                None => MailTransport::Outbox(self.outbox_dir.to_owned()),
            });
        };
        let password = match (self.password_file, self.password_env) {
            (Some(_), Some(_)) => {
                bail!("both {PASSWORD_ENV} and --smtp-password-file are set; keep one")
            }
            (Some(file), None) => Some(read_password(file)?),
            (None, password) => password,
        };
        let credentials = match (&url.user, password) {
            (Some(user), Some(password)) => Some(SmtpCredentials {
                user: user.clone(),
                password,
            }),
            (Some(user), None) => bail!(
                "--smtp-url names the user {user:?}: give its password in {PASSWORD_ENV} or --smtp-password-file"
            ),
            (None, Some(_)) => bail!("an SMTP password is set but --smtp-url names no user"),
            (None, None) => None,
        };
        let extra_ca_pem = match self.ca_file {
            Some(file) => Some(
                std::fs::read(file)
                    .with_context(|| format!("reading the SMTP CA file {}", file.display()))?,
            ),
            None => None,
        };
        Ok(MailTransport::Smtp(SmtpRelay {
            host: url.host.clone(),
            port: url.port,
            security: url.security,
            credentials,
            extra_ca_pem,
            timeout: self.timeout,
        }))
    }
}

/// The password in `file`: its first line, without the line break.
fn read_password(file: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the SMTP password file {}", file.display()))?;
    match text.lines().next() {
        Some(line) if !line.is_empty() => Ok(line.to_owned()),
        _ => bail!("the SMTP password file {} is empty", file.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: Option<&RelayUrl>) -> MailSettings<'_> {
        MailSettings {
            relay_url: url,
            relay_address: None,
            password_file: None,
            password_env: None,
            ca_file: None,
            timeout: Duration::from_secs(30),
            outbox_dir: Path::new("data/outbox"),
        }
    }

    #[test]
    fn relay_urls_name_security_port_and_user() {
        let url: RelayUrl = "smtps://ana%40school.edu@mail.school.edu".parse().unwrap();
        assert_eq!(
            url,
            RelayUrl {
                host: "mail.school.edu".into(),
                port: 465,
                security: SmtpSecurity::ImplicitTls,
                user: Some("ana@school.edu".into()),
            }
        );
        let url: RelayUrl = "smtp://relay.example:2587".parse().unwrap();
        assert_eq!(
            (url.port, url.security, url.user),
            (2587, SmtpSecurity::StartTls, None)
        );
        for bad in [
            "smtps://ana:secret@mail.school.edu",
            "http://mail.school.edu",
            "smtps://",
            "smtps://mail.school.edu/inbox",
            "mail.school.edu:465",
        ] {
            assert!(bad.parse::<RelayUrl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn relay_addresses_are_host_and_port() {
        let relay: RelayAddress = "mail.example.edu:2525".parse().unwrap();
        assert_eq!(
            (relay.host.as_str(), relay.port),
            ("mail.example.edu", 2525)
        );
        for bad in ["mail.example.edu", ":25", "mail:port"] {
            assert!(bad.parse::<RelayAddress>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_password_comes_from_the_environment_or_a_file() {
        let url: RelayUrl = "smtps://ana@mail.school.edu".parse().unwrap();
        let from_env = MailSettings {
            password_env: Some("s3cret".into()),
            ..settings(Some(&url))
        };
        let MailTransport::Smtp(relay) = from_env.transport().unwrap() else {
            panic!("expected a relay")
        };
        let account = relay.credentials.unwrap();
        assert_eq!(
            (account.user.as_str(), account.password.as_str()),
            ("ana", "s3cret")
        );
        assert!(
            !format!("{account:?}").contains("s3cret"),
            "never in Debug output"
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "from file\n").unwrap();
        let from_file = MailSettings {
            password_file: Some(&file),
            ..settings(Some(&url))
        };
        let MailTransport::Smtp(relay) = from_file.transport().unwrap() else {
            panic!("expected a relay")
        };
        assert_eq!(relay.credentials.unwrap().password, "from file");

        assert!(
            settings(Some(&url)).transport().is_err(),
            "a user needs a password"
        );
        let both = MailSettings {
            password_file: Some(&file),
            password_env: Some("x".into()),
            ..settings(Some(&url))
        };
        assert!(both.transport().is_err());
        let stray = MailSettings {
            password_env: Some("x".into()),
            ..settings(None)
        };
        assert!(
            stray.transport().is_err(),
            "a password without a relay is a mistake"
        );
    }

    #[test]
    fn without_a_relay_mail_goes_to_the_outbox() {
        assert_eq!(
            settings(None).transport().unwrap(),
            MailTransport::Outbox("data/outbox".into())
        );
    }
}
