//! Admins alerted: a failed task is posted to the webhook once, signed, and retried through
//! the queue until the receiver takes it; a queue whose oldest due task has waited too long
//! alerts admins by email and webhook once per episode, whichever node looks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bulkq_types::accounts::TaskEmails;
use caseload::admin_alerts::AlertSettings;
use caseload::admin_alerts::backlog::{BacklogLook, check_backlog};
use caseload::admin_alerts::webhook::{
    EVENT_HEADER, SIGNATURE_HEADER, WEBHOOK, WebhookExecutor, WebhookTarget, signature,
};
use caseload::email::{MailTransport, Mailer, SmtpRelay};
use caseload::task_notices::tell_owners;
use caseload::testing::SmtpServer;
use caseload::users::Role;
use caseload::users::accounts::{set_email, set_failure_alerts};
use chrono::Utc;
use migration::Migrator;
use queue::testing::{TestDatabase, fast_config, wait_until};
use queue::{
    ComponentConfig, NewTask, Registry, RetryPolicy, Runtime, Store, TaskFilter, TaskSelector,
    TaskStatus,
};
use serde_json::Value;

use crate::helpers::{add_user, shell};
use crate::task_notices::{ended_task, owner};

queue::backend_tests!(Migrator =>
    a_failure_is_posted_once_signed_and_retried_until_taken,
    a_queue_waiting_too_long_alerts_admins_once_per_episode,
);

const SECRET: &str = "a shared secret of some length";

/// What the receiver was sent: the signature and event headers, and the body.
type Received = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

/// A webhook receiver on loopback that answers 503 to its first delivery and 204 after.
async fn receiver() -> (WebhookTarget, Received) {
    let received: Received = Arc::default();
    let log = received.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let log = log.clone();
            async move {
                let header = |name: &str| {
                    let value = headers.get(name).and_then(|v| v.to_str().ok());
                    value.unwrap_or_default().to_owned()
                };
                let mut log = log.lock().unwrap();
                log.push((
                    header(SIGNATURE_HEADER),
                    header(EVENT_HEADER),
                    body.to_vec(),
                ));
                if log.len() == 1 {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::NO_CONTENT
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (WebhookTarget::new(&url, SECRET).unwrap(), received)
}

fn mailer(smtp: &SmtpServer) -> Mailer {
    let relay = SmtpRelay::plain("127.0.0.1", smtp.port, Duration::from_secs(5));
    Mailer::new("bulkq <bulkq@example.edu>", &MailTransport::Smtp(relay)).unwrap()
}

async fn webhook_tasks(store: &Store) -> Vec<queue::Task> {
    let filter = TaskFilter {
        component: Some(WEBHOOK.to_owned()),
        ..TaskFilter::default()
    };
    store
        .task_list(&filter, queue::Page::first(50))
        .await
        .unwrap()
}

async fn a_failure_is_posted_once_signed_and_retried_until_taken(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let smtp = SmtpServer::start().await;
    let mailer = mailer(&smtp);
    let (target, received) = receiver().await;
    let ann = owner(&db, "ann", None, TaskEmails::None).await;
    let now = Utc::now();
    let failed = ended_task(&db, &store, &ann, "FAILURE", now).await;
    ended_task(&db, &store, &ann, "COMPLETED", now).await;

    // Read twice (a second run, or another node): posted once.
    tell_owners(&store, &mailer, true).await.unwrap();
    tell_owners(&store, &mailer, true).await.unwrap();
    let queued = webhook_tasks(&store).await;
    assert_eq!(queued.len(), 1);

    // The first delivery meets a 503; the queue tries again and the second is taken.
    let mut registry = Registry::new();
    let quick_retry = ComponentConfig {
        retry: RetryPolicy {
            base_delay: Duration::from_millis(100),
            ..RetryPolicy::default()
        },
        ..WebhookExecutor::config()
    };
    registry.register_with(WEBHOOK, WebhookExecutor::new(target).unwrap(), quick_retry);
    let mut events = store.subscribe().await.unwrap();
    let runtime = Runtime::start(fast_config("webhook"), store.clone(), registry)
        .await
        .unwrap();
    let id = queued[0].id;
    wait_until(
        &mut events,
        Duration::from_secs(30),
        "the webhook delivered",
        async || {
            let task = store.task_get(id).await.unwrap().unwrap();
            task.workflow_status == TaskStatus::Completed
        },
    )
    .await;
    runtime.shutdown(Duration::from_secs(5)).await;

    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "one refused, one taken");
    for (signed, event, body) in &received {
        assert_eq!(
            signed,
            &signature(SECRET, body),
            "signed with the shared secret"
        );
        assert_eq!(event, &received[0].1, "the same event both times");
        let posted: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(posted["kind"], "task_failed");
        assert_eq!(posted["detail"]["task_id"], failed.to_string());
        assert_eq!(posted["detail"]["status"], "FAILURE");
        assert_eq!(posted["id"], received[0].1.as_str());
    }
    tell_owners(&store, &mailer, true).await.unwrap();
    assert_eq!(
        webhook_tasks(&store).await.len(),
        1,
        "delivered is not news"
    );
}

async fn a_queue_waiting_too_long_alerts_admins_once_per_episode(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let smtp = SmtpServer::start().await;
    let mailer = mailer(&smtp);
    let (target, _) = receiver().await;
    add_user(&db, "eve", Role::Admin).await;
    set_email(&db.conn, &shell(), "eve", Some("eve@example.edu"))
        .await
        .unwrap();
    set_failure_alerts(&db.conn, "eve", true).await.unwrap();
    // An admin who did not ask hears nothing.
    add_user(&db, "ida", Role::Admin).await;
    set_email(&db.conn, &shell(), "ida", Some("ida@example.edu"))
        .await
        .unwrap();
    let settings = AlertSettings {
        wait_over: Duration::from_secs(60),
        webhook: Some(target),
    };
    let look = async || check_backlog(&store, &mailer, &settings).await.unwrap();
    let waiting_since = async |ago: i64| {
        let mut txn = store.begin_queue().await.unwrap();
        let due = Utc::now() - chrono::Duration::seconds(ago);
        let task =
            NewTask::new("test.nobody_runs_this", Value::Null, uuid::Uuid::nil()).with_run_at(due);
        let task = txn.enqueue(task).await.unwrap();
        txn.commit().await.unwrap();
        task.id
    };

    assert_eq!(look().await, BacklogLook::Unchanged, "an empty queue");
    tell_owners(&store, &mailer, true).await.unwrap();
    assert!(
        !store.people_writing(),
        "a periodic look is nobody writing: bulk work would yield to it for good"
    );
    waiting_since(20).await;
    assert_eq!(look().await, BacklogLook::Unchanged, "under the threshold");
    let old = waiting_since(120).await;
    assert_eq!(look().await, BacklogLook::Raised);
    assert_eq!(look().await, BacklogLook::Unchanged, "once per episode");
    let mail = smtp.received();
    assert_eq!(mail.len(), 1, "eve only");
    assert!(
        mail[0].data.contains("has waited 2 min"),
        "{}",
        mail[0].data
    );
    let posted = webhook_tasks(&store).await;
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].execution_spec["kind"], "queue_backlog");

    // The old task goes; the young one (20 s, under half of 60 s) ends the episode.
    let cancel = TaskSelector::Ids(vec![old]);
    store.task_cancel_many(&cancel, "eve").await.unwrap();
    assert_eq!(look().await, BacklogLook::Cleared);

    // A new episode alerts again, once, though two nodes look at the same moment.
    waiting_since(300).await;
    let (first, second) = tokio::join!(look(), look());
    let raised = [first, second]
        .iter()
        .filter(|l| **l == BacklogLook::Raised)
        .count();
    assert_eq!(raised, 1, "{first:?} {second:?}");
    assert_eq!(smtp.received().len(), 2);
    assert_eq!(webhook_tasks(&store).await.len(), 2);
}
