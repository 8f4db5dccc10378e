use std::time::Duration;

use caseload::email::log_retention::delete_forgotten_sends;
use caseload::email::{
    Delivery, EmailContent, MailTransport, Mailer, Recipient, SmtpRelay, claim_deferred,
    claim_recipients, deferred_count, fail_interrupted, record_outcomes,
};
use caseload::store::entity::{email_send_log as log, person};
use caseload::users::Role;
use chrono::Utc;
use futures_util::StreamExt;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use caseload::testing::SmtpServer;

use crate::helpers::{actor, people};

queue::backend_tests!(Migrator =>
    sends_over_smtp_once_per_recipient,
    bounces_fail_and_deferrals_are_retried,
    interrupted_sends_are_never_repeated,
    the_send_log_forgets_finished_sends_past_retention,
);

fn content() -> EmailContent {
    EmailContent {
        subject: "Spring advising — sign up".into(),
        body: "Hello,\n.\nPlease book a slot.\n".into(),
        cc: vec!["advising@example.edu".into()],
    }
}

fn smtp(server: &SmtpServer) -> Mailer {
    Mailer::new(
        "Advising <noreply@example.edu>",
        &MailTransport::Smtp(SmtpRelay::plain(
            "127.0.0.1",
            server.port,
            Duration::from_secs(5),
        )),
    )
    .unwrap()
}

/// Messages go over kept connections: one after another over one, eight at a time over at
/// most eight (a connection per message would pay a TCP and SMTP handshake each).
#[tokio::test]
async fn messages_reuse_the_relays_connections() {
    let server = SmtpServer::start_counting().await;
    let mailer = smtp(&server);
    let recipient = |n: usize| Recipient {
        person_id: Uuid::now_v7(),
        name: format!("Person {n}"),
        address: format!("person{n}@example.edu"),
    };
    for n in 0..10 {
        assert_eq!(mailer.send(&recipient(n), &content()).await, Delivery::Sent);
    }
    assert_eq!(server.sessions(), 1);
    let recipients: Vec<Recipient> = (10..50).map(recipient).collect();
    let content = content();
    let deliveries: Vec<Delivery> = futures_util::stream::iter(&recipients)
        .map(|r| mailer.send(r, &content))
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(deliveries.iter().all(|d| *d == Delivery::Sent));
    assert_eq!(server.accepted(), 50);
    assert!(server.sessions() <= 8, "{} connections", server.sessions());
}

/// Claims, sends and records one batch the way the executor does; returns the deliveries.
async fn run_batch(
    db: &TestDatabase,
    mailer: &Mailer,
    task: Uuid,
    actor: &caseload::access::Actor,
    ids: &[Uuid],
) -> Vec<(Uuid, Delivery)> {
    let claim = claim_recipients(&db.conn, task, actor, ids, Utc::now())
        .await
        .unwrap();
    let mut deliveries = Vec::new();
    for recipient in &claim.recipients {
        deliveries.push((
            recipient.person_id,
            mailer.send(recipient, &content()).await,
        ));
    }
    record_outcomes(&db.conn, task, &deliveries, Utc::now())
        .await
        .unwrap();
    deliveries
}

async fn statuses(db: &TestDatabase, task: Uuid) -> Vec<String> {
    let mut rows: Vec<String> = log::Entity::find()
        .filter(log::Column::TaskId.eq(task))
        .all(&db.conn)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.status)
        .collect();
    rows.sort();
    rows
}

async fn sends_over_smtp_once_per_recipient(db: TestDatabase) {
    let server = SmtpServer::start().await;
    let mailer = smtp(&server);
    let admin = actor(&db, "admin", Role::Admin).await;
    let ids = people(&db, "mail", 4, None).await;
    // One person has no address: skipped, not an error.
    person::Entity::update_many()
        .col_expr(person::Column::Email, Expr::value(Option::<String>::None))
        .filter(person::Column::Id.eq(ids[3]))
        .exec(&db.conn)
        .await
        .unwrap();
    let task = Uuid::now_v7();

    let claim = claim_recipients(&db.conn, task, &admin, &ids, Utc::now())
        .await
        .unwrap();
    assert_eq!(claim.recipients.len(), 3);
    assert_eq!(claim.without_address, vec![ids[3]]);
    // Claiming the same batch again (a re-run) hands out nobody twice.
    let again = claim_recipients(&db.conn, task, &admin, &ids, Utc::now())
        .await
        .unwrap();
    assert!(again.recipients.is_empty());
    assert_eq!(again.report.unchanged.len(), 4);

    let mut deliveries = Vec::new();
    for recipient in &claim.recipients {
        deliveries.push((
            recipient.person_id,
            mailer.send(recipient, &content()).await,
        ));
    }
    assert!(deliveries.iter().all(|(_, d)| *d == Delivery::Sent));
    let outcomes = record_outcomes(&db.conn, task, &deliveries, Utc::now())
        .await
        .unwrap();
    assert_eq!(outcomes.sent, 3);
    assert_eq!(statuses(&db, task).await, ["sent", "sent", "sent"]);

    let received = server.received();
    assert_eq!(received.len(), 3);
    let first = &received[0];
    assert!(
        first
            .recipients
            .contains(&"advising@example.edu".to_owned())
    );
    assert!(first.data.contains("Subject: "), "{}", first.data);
    assert!(first.data.contains("Please book a slot."));
    assert!(first.data.contains("From: Advising <noreply@example.edu>"));
    let mut to: Vec<&str> = received
        .iter()
        .flat_map(|m| m.recipients.iter().map(String::as_str))
        .filter(|r| r.starts_with("mail"))
        .collect();
    to.sort();
    assert_eq!(
        to,
        [
            "mail0@example.edu",
            "mail1@example.edu",
            "mail2@example.edu"
        ]
    );

    // The batch as a whole run again sends nothing more.
    run_batch(&db, &mailer, task, &admin, &ids).await;
    assert_eq!(server.received().len(), 3);
}

async fn bounces_fail_and_deferrals_are_retried(db: TestDatabase) {
    let server = SmtpServer::start().await;
    let mailer = smtp(&server);
    let admin = actor(&db, "admin", Role::Admin).await;
    let ids = people(&db, "rcpt", 3, None).await;
    server.reply_to_rcpt("rcpt0@example.edu", "550 5.1.1 no such user");
    server.reply_to_rcpt("rcpt1@example.edu", "451 4.3.0 mailbox busy, try later");
    let task = Uuid::now_v7();

    let deliveries = run_batch(&db, &mailer, task, &admin, &ids).await;
    let kind = |n: usize| {
        deliveries
            .iter()
            .find(|(id, _)| *id == ids[n])
            .unwrap()
            .1
            .clone()
    };
    assert!(matches!(kind(0), Delivery::Permanent(detail) if detail.contains("550")));
    assert!(matches!(kind(1), Delivery::Transient(detail) if detail.contains("451")));
    assert_eq!(kind(2), Delivery::Sent);
    assert_eq!(statuses(&db, task).await, ["deferred", "failed", "sent"]);
    assert_eq!(deferred_count(&db.conn, task).await.unwrap(), 1);

    // The retry pass hands out only the deferred one; once the relay accepts, it is sent.
    server.accept_all();
    let retry = claim_deferred(&db.conn, task, Utc::now(), 100, Utc::now())
        .await
        .unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].address, "rcpt1@example.edu");
    let delivery = mailer.send(&retry[0], &content()).await;
    record_outcomes(
        &db.conn,
        task,
        &[(retry[0].person_id, delivery)],
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(statuses(&db, task).await, ["failed", "sent", "sent"]);
    assert_eq!(deferred_count(&db.conn, task).await.unwrap(), 0);

    // A relay that never recovers: after MAX_SEND_ATTEMPTS the deferral becomes a failure.
    let stubborn = Uuid::now_v7();
    server.reply_to_rcpt("rcpt2@example.edu", "421 4.7.0 try again later");
    run_batch(&db, &mailer, stubborn, &admin, &ids[2..]).await;
    for _ in 1..caseload::email::MAX_SEND_ATTEMPTS {
        let retry = claim_deferred(&db.conn, stubborn, Utc::now(), 100, Utc::now())
            .await
            .unwrap();
        assert_eq!(retry.len(), 1);
        let delivery = mailer.send(&retry[0], &content()).await;
        assert!(matches!(delivery, Delivery::Transient(_)));
        record_outcomes(
            &db.conn,
            stubborn,
            &[(retry[0].person_id, delivery)],
            Utc::now(),
        )
        .await
        .unwrap();
    }
    assert_eq!(statuses(&db, stubborn).await, ["failed"]);

    // A relay that is down is transient too.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let down = Mailer::new(
        "noreply@example.edu",
        &MailTransport::Smtp(SmtpRelay::plain("127.0.0.1", port, Duration::from_secs(2))),
    )
    .unwrap();
    let deliveries = run_batch(&db, &down, Uuid::now_v7(), &admin, &ids[..1]).await;
    assert!(matches!(deliveries[0].1, Delivery::Transient(_)));
}

async fn interrupted_sends_are_never_repeated(db: TestDatabase) {
    let outbox = tempfile::tempdir().unwrap();
    let mailer = Mailer::new(
        "noreply@example.edu",
        &MailTransport::Outbox(outbox.path().to_owned()),
    )
    .unwrap();
    let staff = actor(&db, "staff", Role::Staff).await;
    let colleague = actor(&db, "colleague", Role::Staff).await;
    let mine = people(&db, "own", 2, Some(staff.id)).await;
    let theirs = people(&db, "other", 1, Some(colleague.id)).await;
    let task = Uuid::now_v7();

    // An attempt claims its batch, sends one message, and dies before recording anything.
    let claim = claim_recipients(
        &db.conn,
        task,
        &staff,
        &[mine.clone(), theirs.clone()].concat(),
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(claim.report.forbidden, theirs);
    assert_eq!(claim.recipients.len(), 2);
    assert_eq!(
        mailer.send(&claim.recipients[0], &content()).await,
        Delivery::Sent
    );

    // The next attempt starts by failing what the dead one left claimed, and re-running the
    // batch sends nothing: nobody can get the message twice.
    assert_eq!(
        fail_interrupted(&db.conn, task, Utc::now()).await.unwrap(),
        2
    );
    let rerun = claim_recipients(&db.conn, task, &staff, &mine, Utc::now())
        .await
        .unwrap();
    assert!(rerun.recipients.is_empty());
    assert_eq!(statuses(&db, task).await, ["failed", "failed"]);
    let files: Vec<_> = std::fs::read_dir(outbox.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "the outbox holds the one message sent");
    let eml = std::fs::read_to_string(files[0].as_ref().unwrap().path()).unwrap();
    assert!(
        eml.contains("To: \"First0 ownLast\" <own0@example.edu>"),
        "{eml}"
    );
}

/// Sends of tasks no longer waiting or running are forgotten once older than the retention,
/// a few at a time; a waiting task's are kept whatever their age.
async fn the_send_log_forgets_finished_sends_past_retention(db: TestDatabase) {
    use sea_orm::{ActiveModelTrait, Set};

    let ids = people(&db, "kept", 5, None).await;
    let store = queue::Store::new(db.conn.clone());
    let mut txn = store.begin_queue().await.unwrap();
    let waiting = txn
        .enqueue(queue::NewTask::new(
            "test.noop",
            serde_json::json!({}),
            Uuid::nil(),
        ))
        .await
        .unwrap()
        .id;
    txn.commit().await.unwrap();
    // A task finished and pruned long ago: no task row.
    let finished = Uuid::now_v7();
    let now = Utc::now();
    let old = now - chrono::Duration::days(100);
    let rows = [
        (finished, ids[0], old),
        (finished, ids[1], old),
        (finished, ids[2], old),
        (finished, ids[3], now),
        (waiting, ids[4], old),
    ];
    for (task_id, person_id, updated_at) in rows {
        log::ActiveModel {
            task_id: Set(task_id),
            person_id: Set(person_id),
            recipient: Set("someone@example.edu".into()),
            status: Set("sent".into()),
            detail: Set(None),
            attempts: Set(1),
            updated_at: Set(updated_at),
            sent_at: Set(Some(updated_at)),
        }
        .insert(&db.conn)
        .await
        .unwrap();
    }
    let before = now - chrono::Duration::days(90);
    assert_eq!(
        delete_forgotten_sends(&db.conn, before, 2).await.unwrap(),
        2
    );
    assert_eq!(
        delete_forgotten_sends(&db.conn, before, 2).await.unwrap(),
        1
    );
    assert_eq!(
        delete_forgotten_sends(&db.conn, before, 2).await.unwrap(),
        0
    );
    let mut kept: Vec<(Uuid, Uuid)> = log::Entity::find()
        .all(&db.conn)
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row.task_id, row.person_id))
        .collect();
    kept.sort();
    let mut expected = vec![(finished, ids[3]), (waiting, ids[4])];
    expected.sort();
    assert_eq!(
        kept, expected,
        "the recent send and the waiting task's are kept"
    );
}
