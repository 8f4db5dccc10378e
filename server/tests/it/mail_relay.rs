//! Bulk email through a real relay with TLS and AUTH (aiosmtpd): the right password delivers
//! one message per person; a wrong one or an untrusted certificate fails the task at once
//! with the reason, sending nothing.

use std::time::Duration;

use caseload::actions::EMAIL_SENDS_IN_FLIGHT;
use caseload::email::{SmtpCredentials, SmtpRelay, SmtpSecurity};
use caseload::testing::{RelayTls, TlsRelay, insert_people};
use migration::Migrator;
use queue::TaskStatus;
use queue::testing::TestDatabase;
use serde_json::json;
use uuid::Uuid;

use crate::bulk_actions::{Bulk, BulkOptions, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    the_right_password_delivers_once_per_person,
    a_wrong_password_fails_the_task_with_the_reason,
    a_wrong_password_is_tried_by_the_sends_on_their_way_only,
    an_untrusted_certificate_fails_the_task_with_the_reason,
    the_relays_rate_holds_across_nodes,
);

fn settings(relay: &TlsRelay, password: &str, trust: bool) -> SmtpRelay {
    SmtpRelay {
        host: "localhost".into(),
        port: relay.port,
        security: SmtpSecurity::StartTls,
        credentials: Some(SmtpCredentials {
            user: "advising".into(),
            password: password.into(),
        }),
        extra_ca_pem: trust.then(|| relay.certificate_pem.clone()),
        timeout: Duration::from_secs(10),
    }
}

/// Emails `count` new people through `relay` and returns the finished task's status and
/// stored reason.
async fn email_through(
    db: &TestDatabase,
    relay: SmtpRelay,
    count: usize,
) -> (TaskStatus, Option<String>) {
    let options = BulkOptions {
        relay: Some(relay),
        ..BulkOptions::default()
    };
    let bulk = Bulk::start_with(db, options).await;
    let people = insert_people(&db.conn, "relay", count, None).await;
    let cookie = sign_in(&bulk.app).await;
    let body = json!({"ids": ids_json(&people), "subject": "Hello", "body": "Book a slot."});
    let reference = bulk.submit("/api/1/caseload/emails", body, &cookie).await;
    bulk.finished(&reference, &cookie).await;
    let id: Uuid = reference["id"].as_str().unwrap().parse().unwrap();
    let task = bulk.store.task_get(id).await.unwrap().unwrap();
    bulk.stop().await;
    (task.workflow_status, task.workflow_status_desc)
}

async fn the_right_password_delivers_once_per_person(db: TestDatabase) {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    let (status, reason) = email_through(&db, settings(&relay, "correct horse", true), 3).await;
    assert_eq!(status, TaskStatus::Completed, "{reason:?}");
    let received = relay.received();
    assert_eq!(received.len(), 3, "one message per person");
    assert!(
        received
            .iter()
            .all(|m| m.user.as_deref() == Some("advising"))
    );
}

/// Emails through `relay` with `password` (trusting its certificate when `trust`) and checks
/// that the task failed with a reason containing `reason` and nothing was delivered.
async fn fails_with(
    db: &TestDatabase,
    relay: &TlsRelay,
    password: &str,
    trust: bool,
    reason: &str,
) {
    let (status, stored) = email_through(db, settings(relay, password, trust), 3).await;
    assert_eq!(status, TaskStatus::Failure, "{stored:?}");
    let stored = stored.unwrap();
    assert!(stored.contains(reason), "{stored}");
    assert!(relay.received().is_empty());
}

async fn a_wrong_password_fails_the_task_with_the_reason(db: TestDatabase) {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    fails_with(
        &db,
        &relay,
        "battery staple",
        true,
        "refused our credentials",
    )
    .await;
}

/// Forty people in one batch and a wrong password: the relay sees no more refused logins than
/// sends were on their way when the first came back refused, not one per person (a burst
/// that makes relays lock the account).
async fn a_wrong_password_is_tried_by_the_sends_on_their_way_only(db: TestDatabase) {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    let (status, stored) = email_through(&db, settings(&relay, "battery staple", true), 40).await;
    assert_eq!(status, TaskStatus::Failure, "{stored:?}");
    let refused = relay.refused_logins();
    assert!(
        (1..=EMAIL_SENDS_IN_FLIGHT).contains(&refused),
        "{refused} refused logins"
    );
    assert!(relay.received().is_empty());
}

async fn an_untrusted_certificate_fails_the_task_with_the_reason(db: TestDatabase) {
    let relay = TlsRelay::start(RelayTls::StartTls, "advising", "correct horse");
    fails_with(
        &db,
        &relay,
        "correct horse",
        false,
        "no trusted TLS connection",
    )
    .await;
}

/// `--smtp-rate`: two nodes sending at once share one allowance. 60 messages at 20 a second,
/// the bucket full (a second's worth) at the start, cannot all go in under two seconds, and
/// every one goes.
async fn the_relays_rate_holds_across_nodes(db: TestDatabase) {
    use caseload::email::send_rate::SendRate;
    use caseload::email::{EmailContent, MailTransport, Mailer};
    use caseload::testing::SmtpServer;

    let smtp = SmtpServer::start().await;
    let node = || {
        let relay = SmtpRelay::plain("127.0.0.1", smtp.port, Duration::from_secs(5));
        let store = queue::Store::new(db.conn.clone());
        Mailer::new("bulkq <bulkq@example.edu>", &MailTransport::Smtp(relay))
            .unwrap()
            .with_rate(SendRate::new(store, 20))
    };
    let content = EmailContent {
        subject: "Rated".into(),
        body: "One of many.".into(),
        cc: Vec::new(),
    };
    let send = async |mailer: Mailer, node: usize| {
        let sends = (0..30).map(|n| {
            let (mailer, content) = (mailer.clone(), content.clone());
            async move {
                let address = format!("n{node}-{n}@example.edu");
                mailer.send_to("Someone", &address, &content).await
            }
        });
        futures_util::future::join_all(sends).await
    };
    let started = std::time::Instant::now();
    let (first, second) = tokio::join!(send(node(), 1), send(node(), 2));
    let took = started.elapsed();
    let sent = first.iter().chain(&second);
    assert!(
        sent.clone().all(|d| *d == caseload::email::Delivery::Sent),
        "{first:?} {second:?}"
    );
    assert_eq!(smtp.received().len(), 60);
    assert!(
        took >= Duration::from_millis(1_900),
        "60 messages at 20 a second from a full bucket take 2 s, not {took:?}"
    );
}
