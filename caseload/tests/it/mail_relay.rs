//! The mailer against a real relay that speaks TLS and requires AUTH (aiosmtpd): what a
//! hosted relay needs works, and what it refuses is told apart from a recipient's bounce.

use std::time::Duration;

use caseload::email::{
    Delivery, EmailContent, MailTransport, Mailer, Recipient, SmtpCredentials, SmtpRelay,
    SmtpSecurity,
};
use caseload::testing::{RelayTls, TlsRelay};
use uuid::Uuid;

fn mailer(relay: &TlsRelay, security: SmtpSecurity, password: &str, trust: bool) -> Mailer {
    let settings = SmtpRelay {
        host: "localhost".into(),
        port: relay.port,
        security,
        credentials: Some(SmtpCredentials {
            user: "advising".into(),
            password: password.into(),
        }),
        extra_ca_pem: trust.then(|| relay.certificate_pem.clone()),
        timeout: Duration::from_secs(10),
    };
    Mailer::new(
        "Advising <noreply@example.edu>",
        &MailTransport::Smtp(settings),
    )
    .unwrap()
}

async fn send(mailer: &Mailer) -> Delivery {
    let recipient = Recipient {
        person_id: Uuid::now_v7(),
        name: "Ana Diaz".into(),
        address: "ana@example.edu".into(),
    };
    let content = EmailContent {
        subject: "Advising".into(),
        body: "Please book a slot.".into(),
        cc: vec![],
    };
    mailer.send(&recipient, &content).await
}

#[tokio::test]
async fn starttls_and_a_good_password_deliver() {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    let delivery = send(&mailer(
        &relay,
        SmtpSecurity::StartTls,
        "correct horse",
        true,
    ))
    .await;
    assert_eq!(delivery, Delivery::Sent);
    let received = relay.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].to, ["ana@example.edu"]);
    assert_eq!(received[0].user.as_deref(), Some("advising"));
    assert!(received[0].data.contains("Please book a slot."));
}

#[tokio::test]
async fn implicit_tls_and_a_good_password_deliver() {
    let relay = TlsRelay::start(RelayTls::Implicit, "advising", "correct horse");
    let delivery = send(&mailer(
        &relay,
        SmtpSecurity::ImplicitTls,
        "correct horse",
        true,
    ))
    .await;
    assert_eq!(delivery, Delivery::Sent);
    assert_eq!(relay.received().len(), 1);
}

#[tokio::test]
async fn a_wrong_password_is_the_relay_refusing_us() {
    for (tls, security) in [
        (RelayTls::StartTls, SmtpSecurity::StartTls),
        (RelayTls::Implicit, SmtpSecurity::ImplicitTls),
    ] {
        let relay = TlsRelay::start(tls, "advising", "correct horse");
        let delivery = send(&mailer(&relay, security, "battery staple", true)).await;
        let detail = delivery
            .relay_refusal()
            .unwrap_or_else(|| panic!("{delivery:?}"));
        assert!(detail.contains("refused our credentials"), "{detail}");
        assert!(
            !detail.contains("battery"),
            "the password is never in a message"
        );
        assert!(relay.received().is_empty());
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused() {
    for (tls, security) in [
        (RelayTls::StartTls, SmtpSecurity::StartTls),
        (RelayTls::Implicit, SmtpSecurity::ImplicitTls),
    ] {
        let relay = TlsRelay::start(tls, "advising", "correct horse");
        let delivery = send(&mailer(&relay, security, "correct horse", false)).await;
        let detail = delivery
            .relay_refusal()
            .unwrap_or_else(|| panic!("{delivery:?}"));
        assert!(detail.contains("no trusted TLS connection"), "{detail}");
        assert!(
            relay.received().is_empty(),
            "nothing was sent in the clear either"
        );
    }
}

#[tokio::test]
async fn a_relay_that_insists_on_starttls_refuses_plain_smtp() {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    let mut plain = SmtpRelay::plain("localhost", relay.port, Duration::from_secs(10));
    plain.credentials = Some(SmtpCredentials {
        user: "advising".into(),
        password: "correct horse".into(),
    });
    let mailer = Mailer::new("noreply@example.edu", &MailTransport::Smtp(plain)).unwrap();
    let delivery = send(&mailer).await;
    assert!(delivery.relay_refusal().is_some(), "{delivery:?}");
    assert!(relay.received().is_empty());
}
