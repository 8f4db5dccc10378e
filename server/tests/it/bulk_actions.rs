//! The bulk-action endpoints end to end: submitted over HTTP, run by the real queue with the
//! real executors, and their effects counted in the database, in the export file and on the
//! SMTP wire.

use std::time::Duration;

use app::api::ssr::BulkSettings;
use axum::Router;
use axum::http::{StatusCode, header};
use caseload::actions::ActionsConfig;
use caseload::actions::export_files::EXPORT_RETENTION_DEFAULT;
use caseload::email::{MailTransport, Mailer, SmtpRelay};
use caseload::seed::{SeedOptions, seed_people};
use caseload::store::entity::person_watch;
use caseload::testing::{SmtpServer, insert_people};
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{TestDatabase, fast_config, wait_until};
use queue::{Registry, Runtime, RuntimeHandle, Store};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use tempfile::TempDir;
use uuid::Uuid;

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    status_change_applies_within_scope_and_reports_the_rest,
    watch_and_unwatch_are_idempotent,
    a_watch_by_query_stays_within_scope,
    export_is_downloaded_by_its_owner_only,
    email_goes_out_once_per_recipient,
    bad_requests_are_rejected_with_field_messages,
    scheduled_work_waits_for_its_time,
    staff_priorities_stay_within_what_the_dashboard_offers,
    thousands_of_people_change_status_and_export,
);

/// The app with the bulk-action executors running on a real queue runtime.
pub(crate) struct Bulk {
    pub(crate) app: Router,
    pub(crate) store: Store,
    runtime: RuntimeHandle,
    pub(crate) exports: TempDir,
    pub(crate) smtp: SmtpServer,
}

/// What a test changes of [`Bulk`]'s node.
#[derive(Default)]
pub(crate) struct BulkOptions {
    /// Where mail goes instead of the local SMTP server.
    pub(crate) relay: Option<SmtpRelay>,
    /// Instead of the default week.
    pub(crate) export_retention: Option<Duration>,
    /// People per batch instead of 500.
    pub(crate) batch_size: Option<u64>,
}

impl Bulk {
    pub(crate) async fn start(db: &TestDatabase) -> Self {
        Self::start_with(db, BulkOptions::default()).await
    }

    pub(crate) async fn start_with(db: &TestDatabase, options: BulkOptions) -> Self {
        let BulkOptions {
            relay,
            export_retention,
            batch_size,
        } = options;
        let export_retention = export_retention.unwrap_or(EXPORT_RETENTION_DEFAULT);
        let store = Store::new(db.conn.clone());
        let exports = tempfile::tempdir().unwrap();
        let smtp = SmtpServer::start().await;
        let relay = relay
            .unwrap_or_else(|| SmtpRelay::plain("127.0.0.1", smtp.port, Duration::from_secs(5)));
        let mailer = Mailer::new(
            "Advising <advising@example.edu>",
            &MailTransport::Smtp(relay),
        )
        .unwrap();
        let mut registry = Registry::new();
        caseload::actions::register(
            &mut registry,
            ActionsConfig {
                exports_dir: exports.path().to_owned(),
                export_retention,
                mailer,
                batch_size: batch_size.unwrap_or(500),
                batch_time_while_people_write: caseload::actions::batch_time_default(
                    db.conn.get_database_backend(),
                ),
                email_log_retention: caseload::email::log_retention::EMAIL_LOG_RETENTION_DEFAULT,
                audit_retention: caseload::audit::AUDIT_RETENTION_DEFAULT,
                alerts: Default::default(),
            },
        )
        .unwrap();
        let runtime = Runtime::start(fast_config("bulk-test"), store.clone(), registry)
            .await
            .unwrap();
        let bulk = BulkSettings {
            exports_dir: exports.path().to_owned(),
            export_row_cap: 1_000_000,
            export_retention,
            ..BulkSettings::default()
        };
        let app = app_with_settings(db, store.clone(), bulk).await;
        Bulk {
            app,
            store,
            runtime,
            exports,
            smtp,
        }
    }

    /// POSTs an action and returns the 202 body.
    pub(crate) async fn submit(&self, path: &str, body: Value, cookie: &str) -> Value {
        let (response, text) =
            send(&self.app, post_json(path, &body.to_string(), Some(cookie))).await;
        assert_status(&response, &text, StatusCode::ACCEPTED);
        serde_json::from_str(&text).unwrap()
    }

    /// Waits until the task is COMPLETED, FAILURE, ERROR or ABANDONED and returns its view
    /// from `GET /api/1/tasks/{id}`.
    pub(crate) async fn finished(&self, reference: &Value, cookie: &str) -> Value {
        let id: Uuid = reference["id"].as_str().unwrap().parse().unwrap();
        let mut events = self.store.subscribe().await.unwrap();
        wait_until(
            &mut events,
            Duration::from_secs(180),
            "the task finished",
            async || {
                let task = self.store.task_get(id).await.unwrap().unwrap();
                task.workflow_status.is_terminal()
            },
        )
        .await;
        let path = reference["links"]["self"].as_str().unwrap();
        let (response, text) = send(&self.app, get(path, Some(cookie))).await;
        assert_status(&response, &text, StatusCode::OK);
        serde_json::from_str(&text).unwrap()
    }

    pub(crate) async fn stop(self) {
        self.stop_keeping_exports().await;
    }

    /// Stops the node once every attempt has ended and hands back its exports directory. An
    /// abandoned task's status changes at once, while its attempt may still be finishing the
    /// batch in progress and then cutting its file back.
    pub(crate) async fn stop_keeping_exports(self) -> TempDir {
        self.runtime.shutdown(Duration::from_secs(5)).await;
        self.exports
    }
}

pub(crate) fn ids_json(ids: &[Uuid]) -> Value {
    json!(ids.iter().map(Uuid::to_string).collect::<Vec<_>>())
}

async fn count(db: &TestDatabase, sql: &str) -> i64 {
    db.scalar(sql).await
}

async fn status_change_applies_within_scope_and_reports_the_rest(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let sam = add_user(&db, "sam2", Role::Staff).await;
    let colleague = add_user(&db, "colleague", Role::Staff).await;
    let mine = insert_people(&db.conn, "mine", 4, Some(sam.id)).await;
    let unassigned = insert_people(&db.conn, "free", 2, None).await;
    let theirs = insert_people(&db.conn, "theirs", 2, Some(colleague.id)).await;
    let cookie = sign_in_as(&bulk.app, "sam2").await;
    let nobody = Uuid::now_v7();

    let mut ids = vec![mine[0], mine[1], mine[1], unassigned[0], theirs[0], nobody];
    ids.push(mine[2]);
    let reference = bulk
        .submit(
            "/api/1/caseload/program-status-changes",
            json!({"ids": ids_json(&ids), "to_status": "INACTIVE", "reason": "moved away"}),
            &cookie,
        )
        .await;
    // The reply names the task and nothing of its inner state.
    assert_eq!(reference["workflow_status"], "QUEUED");
    assert_eq!(reference["created_by"], "sam2");
    assert!(reference["created_date"].is_string());
    let id = reference["id"].as_str().unwrap();
    assert_eq!(reference["links"]["self"], format!("/api/1/tasks/{id}"));
    // The request in words, with the repeated id once and the status by its name.
    assert_eq!(
        reference["summary"],
        "Change status of 6 people to Inactive"
    );
    for hidden in ["execution_state", "workflow_status_desc", "execution_spec"] {
        assert!(reference.get(hidden).is_none(), "{hidden} exposed");
    }

    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    // The repeated id counts once: 6 distinct people named.
    assert_eq!(task["progress_total"], 6);
    assert_eq!(task["progress_done"], 6);
    let report = &task["report"];
    assert_eq!(report["changed"], 4, "{report}");
    assert_eq!(report["forbidden"], 1);
    assert_eq!(report["unknown"], 1);
    assert_eq!(report["forbidden_sample"], json!([theirs[0].to_string()]));
    assert_eq!(report["unknown_sample"], json!([nobody.to_string()]));
    let history = "SELECT COUNT(*) FROM program_status_change WHERE to_status = 'INACTIVE'";
    assert_eq!(count(&db, history).await, 4);
    let inactive = "SELECT COUNT(*) FROM person WHERE program_status = 'INACTIVE'";
    assert_eq!(count(&db, inactive).await, 4);

    // A saved query reaches everyone it matches within the scope, evaluated at run time:
    // Sam's last ACTIVE person and the unassigned one, never the colleague's people.
    let reference = bulk
        .submit(
            "/api/1/caseload/program-status-changes",
            json!({"query": {"program_status": "ACTIVE"}, "to_status": "GRADUATED", "reason": "done"}),
            &cookie,
        )
        .await;
    assert_eq!(
        reference["summary"],
        "Change status of people in Active to Graduated"
    );
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(task["report"]["changed"], 2, "{task}");
    assert_eq!(task["progress_total"], 2);
    // Once counted, the query's size is part of the summary.
    assert_eq!(
        task["summary"],
        "Change status of 2 people in Active to Graduated"
    );
    // Each change records the status its person had when the walk read them.
    let from_active = "SELECT COUNT(*) FROM program_status_change \
         WHERE to_status = 'GRADUATED' AND from_status = 'ACTIVE'";
    assert_eq!(count(&db, from_active).await, 2);
    // Only the colleague's two people are still ACTIVE.
    let active = "SELECT COUNT(*) FROM person WHERE program_status = 'ACTIVE'";
    assert_eq!(count(&db, active).await, 2);
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM person WHERE program_status = 'GRADUATED'"
        )
        .await,
        2
    );
    bulk.stop().await;
}

async fn watch_and_unwatch_are_idempotent(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "w", 5, None).await;
    let cookie = sign_in(&bulk.app).await;
    let watches = "SELECT COUNT(*) FROM person_watch";

    let body = json!({"ids": ids_json(&people[..3])});
    let reference = bulk
        .submit("/api/1/caseload/watches", body.clone(), &cookie)
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["report"]["changed"], 3, "{task}");
    // Watching them again changes nothing and is no error.
    let reference = bulk.submit("/api/1/caseload/watches", body, &cookie).await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED");
    assert_eq!(
        (
            task["report"]["changed"].clone(),
            task["report"]["unchanged"].clone()
        ),
        (json!(0), json!(3))
    );
    assert_eq!(count(&db, watches).await, 3);

    let reference = bulk
        .submit(
            "/api/1/caseload/unwatches",
            json!({"ids": ids_json(&people[..1])}),
            &cookie,
        )
        .await;
    assert_eq!(
        bulk.finished(&reference, &cookie).await["report"]["changed"],
        1
    );
    assert_eq!(count(&db, watches).await, 2);
    // "all": the whole watch list is cleared.
    let reference = bulk
        .submit("/api/1/caseload/unwatches", json!({"all": true}), &cookie)
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["report"]["changed"], 2, "{task}");
    assert_eq!(count(&db, watches).await, 0);
    bulk.stop().await;
}

/// A saved query's batches are watched as the walk read them: only the people within the
/// run_as user's scope, never a colleague's.
async fn a_watch_by_query_stays_within_scope(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let sam = add_user(&db, "sam3", Role::Staff).await;
    let colleague = add_user(&db, "colleague3", Role::Staff).await;
    let mine = insert_people(&db.conn, "mine", 2, Some(sam.id)).await;
    let unassigned = insert_people(&db.conn, "free", 1, None).await;
    insert_people(&db.conn, "theirs", 2, Some(colleague.id)).await;
    let cookie = sign_in_as(&bulk.app, "sam3").await;
    let query = json!({"query": {"program_status": "ACTIVE"}});

    let reference = bulk
        .submit("/api/1/caseload/watches", query.clone(), &cookie)
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["report"]["changed"], 3, "{task}");
    let mut watched = watched_by(&db, sam.id).await;
    watched.sort();
    let mut mine_or_free = [mine, unassigned].concat();
    mine_or_free.sort();
    assert_eq!(watched, mine_or_free);

    let reference = bulk
        .submit("/api/1/caseload/unwatches", query, &cookie)
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["report"]["changed"], 3, "{task}");
    assert!(watched_by(&db, sam.id).await.is_empty());
    bulk.stop().await;
}

/// The people `staff_user_id` watches.
async fn watched_by(db: &TestDatabase, staff_user_id: Uuid) -> Vec<Uuid> {
    person_watch::Entity::find()
        .filter(person_watch::Column::StaffUserId.eq(staff_user_id))
        .all(&db.conn)
        .await
        .unwrap()
        .into_iter()
        .map(|watch| watch.person_id)
        .collect()
}

async fn export_is_downloaded_by_its_owner_only(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "lee", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    insert_people(&db.conn, "=Exp", 30, None).await;
    let cookie = sign_in(&bulk.app).await;

    let reference = bulk
        .submit(
            "/api/1/caseload/exports",
            json!({"query": {"name": "=exp"}, "columns": ["school_id", "last_name", "email"]}),
            &cookie,
        )
        .await;
    let id = reference["id"].as_str().unwrap().to_owned();
    let file_link = format!("/api/1/caseload/exports/{id}/file");
    assert_eq!(reference["links"]["file"], file_link);
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(task["report"]["changed"], 30);
    assert_eq!(
        task["summary"],
        "Export 30 people matching '=exp' to CSV (School id, Last name, Email)"
    );

    let (response, csv) = send(&bulk.app, get(&file_link, Some(&cookie))).await;
    assert_status(&response, &csv, StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        response.headers()[header::CONTENT_DISPOSITION]
            .to_str()
            .unwrap()
            .starts_with("attachment;")
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "school_id,last_name,email");
    assert_eq!(lines.len(), 31);
    // Cells a spreadsheet would run as formulas are defused.
    assert!(lines[1].starts_with("'=Exp-"), "{}", lines[1]);

    let lee = sign_in_as(&bulk.app, "lee").await;
    let (response, body) = send(&bulk.app, get(&file_link, Some(&lee))).await;
    assert_status(&response, &body, StatusCode::NOT_FOUND);
    let ada = sign_in_as(&bulk.app, "ada").await;
    let (response, body) = send(&bulk.app, get(&file_link, Some(&ada))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    // The same rule in every view: an admin's list offers no link to someone else's file.
    let (response, body) = send(&bulk.app, get("/api/1/tasks", Some(&ada))).await;
    assert_status(&response, &body, StatusCode::OK);
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let seen = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["id"] == id.as_str())
        .expect("admins list every task")
        .clone();
    assert_eq!(seen["links"]["file"], serde_json::Value::Null, "{seen}");
    assert_eq!(seen["export_file"]["state"], "not_yours", "{seen}");
    let (response, body) = send(&bulk.app, get(&file_link, None)).await;
    assert_status(&response, &body, StatusCode::UNAUTHORIZED);
    let bad = "/api/1/caseload/exports/not-a-uuid/file";
    let (response, body) = send(&bulk.app, get(bad, Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::BAD_REQUEST);

    // An export that has not finished yet (its action is paused) is a conflict, not a file.
    bulk.store
        .component_pause(bulkq_types::actions::ActionKind::Export.component(), "test")
        .await
        .unwrap();
    let reference = bulk
        .submit("/api/1/caseload/exports", json!({"all": true}), &cookie)
        .await;
    let pending = format!(
        "/api/1/caseload/exports/{}/file",
        reference["id"].as_str().unwrap()
    );
    let (response, body) = send(&bulk.app, get(&pending, Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::CONFLICT);
    assert!(body.contains("QUEUED"), "{body}");
    // A file removed from the server is gone, not an error.
    std::fs::remove_file(bulk.exports.path().join(format!("{id}.csv"))).unwrap();
    let (response, body) = send(&bulk.app, get(&file_link, Some(&cookie))).await;
    assert_status(&response, &body, StatusCode::GONE);
    bulk.stop().await;
}

async fn email_goes_out_once_per_recipient(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "mail", 12, None).await;
    let cookie = sign_in(&bulk.app).await;
    bulk.smtp
        .reply_to_rcpt("mail3@example.edu", "550 5.1.1 no such mailbox");

    let reference = bulk
        .submit(
            "/api/1/caseload/emails",
            json!({
                "ids": ids_json(&people),
                "subject": "Advising hours",
                "body": "Hello,\nour office hours moved.\n",
                "cc": ["office@example.edu"],
            }),
            &cookie,
        )
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(task["summary"], "Email 12 people: 'Advising hours'");
    assert_eq!(task["report"]["changed"], 11, "{task}");
    assert_eq!(task["report"]["failed"], 1);

    let received = bulk.smtp.received();
    assert_eq!(received.len(), 11);
    let mut recipients: Vec<String> = received
        .iter()
        .flat_map(|m| m.recipients.clone())
        .filter(|r| r != "office@example.edu")
        .collect();
    recipients.sort();
    recipients.dedup();
    assert_eq!(recipients.len(), 11, "each recipient exactly once");
    assert!(!recipients.contains(&"mail3@example.edu".to_owned()));
    assert!(
        received
            .iter()
            .all(|m| m.data.contains("Subject: Advising hours"))
    );
    let sent = "SELECT COUNT(*) FROM email_send_log WHERE status = 'sent'";
    assert_eq!(count(&db, sent).await, 11);
    bulk.stop().await;
}

async fn bad_requests_are_rejected_with_field_messages(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let cookie = sign_in(&bulk.app).await;
    let person = insert_people(&db.conn, "x", 1, None).await[0].to_string();
    let too_many: Vec<String> = (0..10_001).map(|_| Uuid::now_v7().to_string()).collect();
    let cases: Vec<(&str, String, StatusCode, Option<&str>)> = vec![
        (
            "/api/1/caseload/watches",
            "{\"ids\": [".into(),
            StatusCode::BAD_REQUEST,
            None,
        ),
        (
            "/api/1/caseload/watches",
            json!({"ids": "everyone"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            "/api/1/caseload/watches",
            json!({"ids": too_many}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"ids": []}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/watches",
            json!({}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"ids": [person], "query": {}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("ids"),
        ),
        (
            "/api/1/caseload/watches",
            json!({"query": {"contains": "ab"}}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("query"),
        ),
        (
            "/api/1/caseload/program-status-changes",
            json!({"ids": [person], "to_status": "ON_THE_MOON", "reason": "x"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("to_status"),
        ),
        (
            "/api/1/caseload/program-status-changes",
            json!({"ids": [person], "to_status": "ACTIVE", "reason": "  "}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("reason"),
        ),
        (
            "/api/1/caseload/exports",
            json!({"columns": []}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("columns"),
        ),
        (
            "/api/1/caseload/exports",
            json!({"columns": ["password_hash"]}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            "/api/1/caseload/exports",
            json!({"row_cap": 2_000_000}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("row_cap"),
        ),
        (
            "/api/1/caseload/emails",
            json!({"ids": [person], "subject": "", "body": "b"}).to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("subject"),
        ),
        (
            "/api/1/caseload/emails",
            json!({"ids": [person], "subject": "s", "body": "b", "cc": ["not an address"]})
                .to_string(),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("cc"),
        ),
    ];
    for (path, body, expected, field) in cases {
        let (response, text) = send(&bulk.app, post_json(path, &body, Some(&cookie))).await;
        assert_eq!(response.status(), expected, "{path} {body}: {text}");
        let reply: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
        assert!(reply["error"].is_string(), "{text}");
        if let Some(field) = field {
            assert!(reply["fields"][field].is_string(), "{path} {body}: {text}");
        }
    }
    // Signed out: 401 before anything is read.
    let body = json!({"ids": [person]}).to_string();
    let (response, text) = send(&bulk.app, post_json("/api/1/caseload/watches", &body, None)).await;
    assert_status(&response, &text, StatusCode::UNAUTHORIZED);
    // Nothing was enqueued by any of them.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM queue_task").await, 0);
    bulk.stop().await;
}

async fn scheduled_work_waits_for_its_time(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let people = insert_people(&db.conn, "later", 2, None).await;
    let cookie = sign_in(&bulk.app).await;
    let run_at = chrono::Utc::now() + chrono::Duration::seconds(2);
    // Given with an offset, stored in UTC.
    let local = run_at.with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap());
    let reference = bulk
        .submit(
            "/api/1/caseload/watches",
            json!({"ids": ids_json(&people), "run_at": local.to_rfc3339(), "priority": 7}),
            &cookie,
        )
        .await;
    let id: Uuid = reference["id"].as_str().unwrap().parse().unwrap();
    let queued = bulk.store.task_get(id).await.unwrap().unwrap();
    assert_eq!(queued.priority, 7);
    assert_eq!(queued.run_at.timestamp_micros(), run_at.timestamp_micros());
    let view = bulk.finished(&reference, &cookie).await;
    assert_eq!(view["workflow_status"], "COMPLETED", "{view}");
    let done = bulk.store.task_get(id).await.unwrap().unwrap();
    assert!(
        done.execution_started_date.unwrap() >= queued.run_at,
        "never early: started {:?}, due {}",
        done.execution_started_date,
        queued.run_at
    );
    let far = chrono::Utc::now() + chrono::Duration::days(400);
    for (body, field) in [
        (
            json!({"ids": ids_json(&people), "priority": 1000}),
            Some("priority"),
        ),
        // The most negative number has no positive twin: refused, not overflowed.
        (
            json!({"ids": ids_json(&people), "priority": i32::MIN}),
            Some("priority"),
        ),
        (
            json!({"ids": ids_json(&people), "run_at": far.to_rfc3339()}),
            Some("run_at"),
        ),
        // Some times are outside what the databases store.
        (
            json!({"ids": ids_json(&people), "run_at": "1452-12-14T01:21:53.65Z"}),
            Some("run_at"),
        ),
        (
            json!({"ids": ids_json(&people), "run_at": "tomorrow"}),
            None,
        ),
    ] {
        let (response, text) = send(
            &bulk.app,
            post_json("/api/1/caseload/watches", &body.to_string(), Some(&cookie)),
        )
        .await;
        assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
        if let Some(field) = field {
            let reply: Value = serde_json::from_str(&text).unwrap();
            assert!(reply["fields"][field].is_string(), "{text}");
        }
    }
    bulk.stop().await;
}

/// Staff may rank their tasks as the forms do (-10 to 10); only admins go further, so one
/// person cannot jump the whole queue through the API.
async fn staff_priorities_stay_within_what_the_dashboard_offers(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "ranked", 2, None).await;
    let sam = sign_in(&bulk.app).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    let watch = |priority: i32| json!({"ids": ids_json(&people), "priority": priority});
    for allowed in [10, -10] {
        bulk.submit("/api/1/caseload/watches", watch(allowed), &sam)
            .await;
    }
    let (response, text) = send(
        &bulk.app,
        post_json(
            "/api/1/caseload/watches",
            &watch(50).to_string(),
            Some(&sam),
        ),
    )
    .await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        reply["fields"]["priority"], "from -10 to 10 for staff (admins may go further)",
        "{text}"
    );
    let admins = bulk
        .submit("/api/1/caseload/watches", watch(50), &ada)
        .await;
    let id: Uuid = admins["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(bulk.store.task_get(id).await.unwrap().unwrap().priority, 50);
    bulk.stop().await;
}

/// Through the API, in the executor's batches: everyone's status changed once, then
/// everyone exported once. (`make bench` does both for a million people.)
async fn thousands_of_people_change_status_and_export(db: TestDatabase) {
    const PEOPLE: u64 = 12_000;
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    seed_people(
        &db.conn,
        &SeedOptions {
            people: PEOPLE,
            seed: 11,
            coaches: Vec::new(),
        },
    )
    .await
    .unwrap();
    let cookie = sign_in_as(&bulk.app, "ada").await;
    let not_withdrawn = count(
        &db,
        "SELECT COUNT(*) FROM person WHERE program_status <> 'WITHDRAWN'",
    )
    .await;

    let started = std::time::Instant::now();
    let reference = bulk
        .submit(
            "/api/1/caseload/program-status-changes",
            json!({"query": {}, "to_status": "WITHDRAWN", "reason": "programme closed"}),
            &cookie,
        )
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    eprintln!(
        "status change of {PEOPLE} people ({:?}): {:.1} s",
        db.backend,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    assert_eq!(task["progress_done"], PEOPLE);
    assert_eq!(task["report"]["changed"], not_withdrawn);
    let withdrawn = "SELECT COUNT(*) FROM person WHERE program_status = 'WITHDRAWN'";
    assert_eq!(count(&db, withdrawn).await, PEOPLE as i64);
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM program_status_change").await,
        not_withdrawn
    );

    let started = std::time::Instant::now();
    let reference = bulk
        .submit("/api/1/caseload/exports", json!({"all": true}), &cookie)
        .await;
    let task = bulk.finished(&reference, &cookie).await;
    eprintln!(
        "export of {PEOPLE} people ({:?}): {:.1} s",
        db.backend,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
    let link = reference["links"]["file"].as_str().unwrap();
    let (response, csv) = send(&bulk.app, get(link, Some(&cookie))).await;
    assert_status(&response, &csv, StatusCode::OK);
    assert_eq!(csv.lines().count() as u64, PEOPLE + 1);
    // Every person exactly once.
    let mut ids: Vec<&str> = csv.lines().skip(1).map(|l| &l[..36]).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len() as u64, PEOPLE);
    bulk.stop().await;
}
