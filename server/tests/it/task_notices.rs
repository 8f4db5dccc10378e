//! Owners told when their tasks end: each end once (a second run, or another node's, sends
//! nothing more), as each owner chose (every end, failures only, never), only with an
//! address on file, and not for ends older than the look-back; a task that ends again
//! after a retry is news again. Admins who asked hear of every failure, once each.

use std::time::Duration;

use bulkq_types::accounts::TaskEmails;
use bulkq_types::requests::{ActionRequest, TargetRequest, WatchRequest};
use caseload::actions::submit;
use caseload::email::{MailTransport, Mailer, SmtpRelay};
use caseload::task_notices::tell_owners;
use caseload::testing::SmtpServer;
use caseload::users::accounts::{set_email, set_failure_alerts, set_task_emails};
use caseload::users::{Role, StaffUser};
use chrono::Utc;
use migration::Migrator;
use queue::Store;
use queue::testing::TestDatabase;
use sea_orm::{ConnectionTrait, Statement};
use uuid::Uuid;

use crate::helpers::{NODE_LIMITS, add_user, shell};

queue::backend_tests!(Migrator =>
    owners_hear_of_the_ends_they_chose_once_each,
    more_ends_than_a_page_are_all_told,
);

/// More tasks ended in the look-back than one page reads (200): every one is told, not the
/// oldest 200 again and again.
async fn more_ends_than_a_page_are_all_told(db: TestDatabase) {
    let fay = owner(&db, "fay", Some("fay@example.edu"), TaskEmails::All).await;
    let store = Store::new(db.conn.clone());
    let smtp = SmtpServer::start().await;
    let relay = SmtpRelay::plain("127.0.0.1", smtp.port, Duration::from_secs(5));
    let mailer = Mailer::new("bulkq <bulkq@example.edu>", &MailTransport::Smtp(relay)).unwrap();
    let now = Utc::now();
    for n in 0..205 {
        let at = now - chrono::Duration::seconds(300 - n);
        ended_task(&db, &store, &fay, "COMPLETED", at).await;
    }
    assert_eq!(tell_owners(&store, &mailer, false).await.unwrap(), 205);
    assert_eq!(tell_owners(&store, &mailer, false).await.unwrap(), 0);
}

async fn owners_hear_of_the_ends_they_chose_once_each(db: TestDatabase) {
    let ann = owner(&db, "ann", Some("ann@example.edu"), TaskEmails::All).await;
    let bob = owner(&db, "bob", Some("bob@example.edu"), TaskEmails::Failures).await;
    let cat = owner(&db, "cat", Some("cat@example.edu"), TaskEmails::None).await;
    let dan = owner(&db, "dan", None, TaskEmails::All).await;
    // An admin alerted of every failure, who wants no news of their own tasks.
    let eve = add_user(&db, "eve", Role::Admin).await;
    set_email(&db.conn, &shell(), "eve", Some("eve@example.edu"))
        .await
        .unwrap();
    set_task_emails(&db.conn, "eve", TaskEmails::None)
        .await
        .unwrap();
    set_failure_alerts(&db.conn, "eve", true).await.unwrap();
    assert!(
        set_failure_alerts(&db.conn, "bob", true).await.is_err(),
        "staff cannot be alerted of others' failures"
    );
    let store = Store::new(db.conn.clone());
    let smtp = SmtpServer::start().await;
    let relay = SmtpRelay::plain("127.0.0.1", smtp.port, Duration::from_secs(5));
    let mailer = Mailer::new("bulkq <bulkq@example.edu>", &MailTransport::Smtp(relay)).unwrap();

    let now = Utc::now();
    ended_task(&db, &store, &ann, "COMPLETED", now).await;
    let ann_failed = ended_task(&db, &store, &ann, "FAILURE", now).await;
    ended_task(&db, &store, &bob, "COMPLETED", now).await;
    ended_task(&db, &store, &bob, "ERROR", now).await;
    ended_task(&db, &store, &cat, "FAILURE", now).await;
    ended_task(&db, &store, &dan, "FAILURE", now).await;
    // Ended before the look-back: old news.
    ended_task(
        &db,
        &store,
        &ann,
        "FAILURE",
        now - chrono::Duration::hours(2),
    )
    .await;
    // Still running: nothing to tell.
    unended_task(&store, &ann).await;
    ended_task(&db, &store, &eve, "FAILURE", now).await;

    // Ann: both ends; Bob: his error; Eve: the four failures of others (Ann's, Bob's,
    // Cat's, Dan's), not her own.
    assert_eq!(tell_owners(&store, &mailer, false).await.unwrap(), 7);
    let mut to: Vec<String> = smtp
        .received()
        .iter()
        .flat_map(|message| message.recipients.clone())
        .collect();
    to.sort();
    let mut expected = vec!["ann@example.edu"; 2];
    expected.push("bob@example.edu");
    expected.extend(["eve@example.edu"; 4]);
    assert_eq!(to, expected);
    let messages: Vec<String> = smtp.received().iter().map(|m| m.data.clone()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Subject: Your task finished: Watch")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Subject: Your task failed: Watch")
                && m.contains(&ann_failed.to_string())),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Subject: A task of cat failed: Watch")),
        "{messages:?}"
    );

    assert_eq!(
        tell_owners(&store, &mailer, false).await.unwrap(),
        0,
        "each end once"
    );
    assert_eq!(smtp.received().len(), 7);

    // Retried by an admin, the task failed again: a new end, told once to Ann and Eve.
    set_ended(
        &db,
        ann_failed,
        "FAILURE",
        now + chrono::Duration::seconds(5),
    )
    .await;
    assert_eq!(tell_owners(&store, &mailer, false).await.unwrap(), 2);
    assert_eq!(tell_owners(&store, &mailer, false).await.unwrap(), 0);
    assert_eq!(smtp.received().len(), 9);
    let rows = db
        .scalar("SELECT COUNT(*) FROM task_notice WHERE status = 'sent'")
        .await;
    assert_eq!(rows, 9);
}

pub(crate) async fn owner(
    db: &TestDatabase,
    username: &str,
    email: Option<&str>,
    choice: TaskEmails,
) -> StaffUser {
    let user = add_user(db, username, Role::Staff).await;
    set_email(&db.conn, &shell(), username, email)
        .await
        .unwrap();
    set_task_emails(&db.conn, username, choice).await.unwrap();
    user
}

/// A watch task of `owner`, not yet run.
pub(crate) async fn unended_task(store: &Store, owner: &StaffUser) -> Uuid {
    let request = ActionRequest::Watch(WatchRequest {
        target: TargetRequest {
            ids: Some(vec![Uuid::now_v7()]),
            ..TargetRequest::default()
        },
        ..WatchRequest::default()
    });
    submit(store, owner, request, &NODE_LIMITS, None)
        .await
        .unwrap()
        .id
}

/// A watch task of `owner` that ended in `status` at `at`.
pub(crate) async fn ended_task(
    db: &TestDatabase,
    store: &Store,
    owner: &StaffUser,
    status: &str,
    at: chrono::DateTime<Utc>,
) -> Uuid {
    let id = unended_task(store, owner).await;
    set_ended(db, id, status, at).await;
    id
}

/// Moves task `id` to `status`, stopped at `at`, as its worker (or an admin) would.
async fn set_ended(db: &TestDatabase, id: Uuid, status: &str, at: chrono::DateTime<Utc>) {
    let statement = Statement::from_sql_and_values(
        db.conn.get_database_backend(),
        "UPDATE queue_task SET workflow_status = $1, workflow_stopped_date = $2 WHERE id = $3",
        [status.into(), at.into(), id.into()],
    );
    db.conn.execute_raw(statement).await.unwrap();
}
