//! Whole nodes crashing mid-action: the real `bulkq` binary runs a bulk action, is killed
//! with SIGKILL a few times part-way through and started again under the same system id
//! (so the new incarnation rescues the task at once), and the action's effects are then
//! counted: a status change exactly once per person, an email at most once per address
//! and never silently dropped, a CSV import's rows each applied or reported exactly once.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use bulkq_types::actions::{ActionKind, ActionReport};
use bulkq_types::alerts::AlertContent;
use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::ActionRequest;
use bulkq_types::requests::{
    CoachReassignmentRequest, EarlyAlertRequest, EmailRequest, StatusChangeRequest, TargetRequest,
};
use caseload::actions::{submit, task_report};
use caseload::people_import::ImportProgress;
use caseload::seed::{SeedOptions, seed_people};
use caseload::store::entity::email_send_log as send_log;
use caseload::testing::SmtpServer;
use caseload::users::{Role, StaffUser};
use migration::Migrator;
use queue::testing::TestDatabase;
use queue::{Store, Task, TaskStatus};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Statement};
use tokio::process::Child;
use uuid::Uuid;

use crate::helpers::{NODE_LIMITS, active_people_csv, add_user, import_started, shell};
use crate::nodes::{ScratchDir, kill};

queue::backend_tests!(Migrator =>
    a_status_change_survives_killed_nodes,
    a_coach_reassignment_survives_killed_nodes,
    early_alerts_survive_killed_nodes,
    an_email_survives_killed_nodes,
    a_people_import_survives_killed_nodes,
);

/// The node's name; every incarnation uses it, so each restart rescues its predecessor's task.
const SYSTEM_ID: &str = "crash-node";
/// The node is killed once each of these shares of the target is done, then restarted.
const KILL_AT: [f64; 3] = [0.2, 0.45, 0.7];
/// How long one wait (for progress, or for the end) may take before the test gives up.
const PATIENCE: Duration = Duration::from_secs(120);
/// How often the test looks at the task while the node works.
const POLL: Duration = Duration::from_millis(15);

async fn a_status_change_survives_killed_nodes(db: TestDatabase) {
    // 50 batches of 100: a few seconds in all on the debug build.
    let (people, batch_size) = (5_000, 100);
    let user = admin_with_people(&db, people).await;
    let not_inactive = "SELECT COUNT(*) FROM person WHERE program_status <> 'INACTIVE'";
    let to_change = db.scalar(not_inactive).await;
    let store = Store::new(db.conn.clone());
    let request = ActionRequest::ProgramStatusChange(StatusChangeRequest {
        target: everyone(),
        to_status: "INACTIVE".into(),
        reason: "crash test".into(),
        ..StatusChangeRequest::default()
    });
    let task = submit(&store, &user, request, &NODE_LIMITS, None)
        .await
        .unwrap();

    let run = run_with_kills(&db, &store, task.id, people, batch_size, &[]).await;

    let (history, people_with_history, repeated) =
        history_of_task(&db, "program_status_change", task.id).await;
    let lost = to_change - people_with_history;
    let duplicated = history - people_with_history;
    println!(
        "status change crash test ({}): {people} people, {to_change} to change, {}, \
         {lost} lost, {duplicated} duplicated",
        backend(&db),
        run.summary(),
    );
    assert_eq!(db.scalar(not_inactive).await, 0, "everyone is INACTIVE");
    assert_eq!(
        (lost, duplicated, repeated),
        (0, 0, 0),
        "one history row per person changed"
    );
    assert_eq!(history, to_change);
    let report = run.report();
    assert_eq!(
        (report.changed, report.unchanged),
        (to_change as u64, (people - to_change) as u64),
        "the checkpointed report counts every person once"
    );
    assert_eq!(
        outcomes_of_task(&db, task.id, ActionKind::ProgramStatusChange).await,
        [(1, to_change), (2, people - to_change)],
        "one outcome per person: changed, unchanged"
    );
}

async fn a_coach_reassignment_survives_killed_nodes(db: TestDatabase) {
    // 40 batches of 50.
    let (people, batch_size) = (2_000, 50);
    let user = admin_with_people(&db, people).await;
    let coach = add_user(&db, "kara", Role::Staff).await;
    let store = Store::new(db.conn.clone());
    let request = ActionRequest::CoachReassignment(CoachReassignmentRequest {
        target: everyone(),
        to_coach: coach.username.clone(),
        ..CoachReassignmentRequest::default()
    });
    let task = submit(&store, &user, request, &NODE_LIMITS, None)
        .await
        .unwrap();

    let run = run_with_kills(&db, &store, task.id, people, batch_size, &[]).await;

    let (history, people_with_history, repeated) =
        history_of_task(&db, "coach_change", task.id).await;
    println!(
        "coach reassignment crash test ({}): {people} people, {}, {history} moves",
        backend(&db),
        run.summary(),
    );
    let elsewhere = Statement::from_sql_and_values(
        db.conn.get_database_backend(),
        "SELECT COUNT(*) FROM person WHERE coach_id IS NULL OR coach_id <> $1",
        [coach.id.into()],
    );
    let elsewhere: i64 = db
        .conn
        .query_one_raw(elsewhere)
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index(0)
        .unwrap();
    assert_eq!(elsewhere, 0, "everyone is with the new coach");
    assert_eq!(
        (history, people_with_history, repeated),
        (people, people, 0),
        "one move per person"
    );
    let report = run.report();
    assert_eq!(
        (report.changed, report.unchanged),
        (people as u64, 0),
        "the checkpointed report counts every person once"
    );
}

async fn early_alerts_survive_killed_nodes(db: TestDatabase) {
    // 100 batches of 50, the people spread over five coaches with addresses: an alert's
    // batch is quick, and with 40 the walk once ended between the last look and the kill.
    let (people, batch_size) = (5_000, 50);
    let user = add_user(&db, "ada", Role::Admin).await;
    let mut coaches = Vec::new();
    for n in 0..5 {
        let coach = add_user(&db, &format!("coach{n}"), Role::Staff).await;
        let address = format!("coach{n}@example.edu");
        caseload::users::accounts::set_email(&db.conn, &shell(), &coach.username, Some(&address))
            .await
            .unwrap();
        coaches.push(coach.id);
    }
    let options = SeedOptions {
        people: people as u64,
        seed: 7,
        coaches: coaches.clone(),
    };
    seed_people(&db.conn, &options).await.unwrap();
    let coached = db
        .scalar("SELECT COUNT(DISTINCT coach_id) FROM person WHERE coach_id IS NOT NULL")
        .await;
    let smtp = SmtpServer::start().await;
    let store = Store::new(db.conn.clone());
    let request = ActionRequest::EarlyAlert(EarlyAlertRequest {
        target: everyone(),
        alert: AlertContent {
            course: "Crash test".into(),
            reasons: vec!["LOW_GRADES".into()],
            ..AlertContent::default()
        },
        ..EarlyAlertRequest::default()
    });
    let task = submit(&store, &user, request, &NODE_LIMITS, None)
        .await
        .unwrap();

    let relay = format!("127.0.0.1:{}", smtp.port);
    let relay_args = ["--smtp-relay", relay.as_str()];
    let run = run_with_kills(&db, &store, task.id, people, batch_size, &relay_args).await;

    let (alerts, people_with_alerts, repeated) = history_of_task(&db, "early_alert", task.id).await;
    let mut told: HashMap<String, i64> = HashMap::new();
    for message in smtp.received() {
        for recipient in message.recipients {
            *told.entry(recipient).or_default() += 1;
        }
    }
    println!(
        "early alert crash test ({}): {people} people, {}, {alerts} alerts, {} coaches told",
        backend(&db),
        run.summary(),
        told.len(),
    );
    assert_eq!(
        (alerts, people_with_alerts, repeated),
        (people, people, 0),
        "one alert per person"
    );
    assert_eq!(
        told.len() as i64,
        coached,
        "every coach of the people is told"
    );
    assert!(
        told.values().all(|times| *times == 1),
        "each coach once: {told:?}"
    );
    let report = run.report();
    assert_eq!(
        (report.changed, report.coaches_told),
        (people as u64, coached as u64),
        "the checkpointed report counts every person and coach once"
    );
}

async fn an_email_survives_killed_nodes(db: TestDatabase) {
    // 13 batches of 20: enough for kills to land while messages are on their way.
    let (people, batch_size) = (250, 20);
    let user = admin_with_people(&db, people).await;
    let with_address = db
        .scalar("SELECT COUNT(*) FROM person WHERE email IS NOT NULL")
        .await;
    let smtp = SmtpServer::start().await;
    let store = Store::new(db.conn.clone());
    let request = ActionRequest::Email(EmailRequest {
        target: everyone(),
        subject: "Crash test".into(),
        body: "Hello,\nthis message must arrive at most once.\n".into(),
        cc: vec![],
        ..EmailRequest::default()
    });
    let task = submit(&store, &user, request, &NODE_LIMITS, None)
        .await
        .unwrap();

    let relay = format!("127.0.0.1:{}", smtp.port);
    let relay_args = ["--smtp-relay", relay.as_str()];
    let run = run_with_kills(&db, &store, task.id, people, batch_size, &relay_args).await;

    let rows = send_log::Entity::find()
        .filter(send_log::Column::TaskId.eq(task.id))
        .all(&db.conn)
        .await
        .unwrap();
    let mut received: HashMap<String, i64> = HashMap::new();
    for message in smtp.received() {
        for recipient in message.recipients {
            *received.entry(recipient).or_default() += 1;
        }
    }
    let with_status = |status: &'static str| rows.iter().filter(move |row| row.status == status);
    let sent = with_status("sent").count() as i64;
    let interrupted = with_status("failed").count() as i64;
    let sent_not_received = with_status("sent")
        .filter(|row| !received.contains_key(&row.recipient))
        .count() as i64;
    let lost = (with_address - rows.len() as i64) + sent_not_received;
    let duplicated: i64 = received.values().map(|times| times - 1).sum();
    let interrupted_but_received = with_status("failed")
        .filter(|row| received.contains_key(&row.recipient))
        .count();
    println!(
        "email crash test ({}): {people} people, {with_address} with an address, {}, \
         {sent} sent, {interrupted} interrupted ({interrupted_but_received} of them reached \
         the relay), {lost} lost, {duplicated} duplicated",
        backend(&db),
        run.summary(),
    );
    assert_eq!(rows.len() as i64, with_address, "one log row per address");
    assert_eq!(
        (lost, duplicated),
        (0, 0),
        "at most once, and nothing dropped"
    );
    for row in with_status("failed") {
        let detail = row.detail.as_deref().unwrap_or_default();
        assert!(
            detail.starts_with("interrupted while sending"),
            "only interrupted sends may fail here: {row:?}"
        );
    }
    // One batch's messages are on their way while the next is claimed.
    assert!(
        interrupted <= run.kills as i64 * 2 * batch_size,
        "at most two batches are interrupted per kill"
    );
    assert_eq!(
        sent + interrupted,
        with_address,
        "nothing is left sending or deferred"
    );
    let logged: HashSet<&str> = rows.iter().map(|row| row.recipient.as_str()).collect();
    for address in received.keys() {
        assert!(
            logged.contains(address.as_str()),
            "{address} got a message the log does not know of"
        );
    }
    let report = run.report();
    assert_eq!(
        (report.changed, report.failed, report.deferred),
        (sent as u64, interrupted as u64, 0),
        "the checkpointed report matches the log"
    );
    assert_eq!(report.without_address, (people - with_address) as u64);
    assert_eq!(
        outcomes_of_task(&db, task.id, ActionKind::Email).await,
        [(1, sent), (5, people - with_address), (7, interrupted)]
            .into_iter()
            .filter(|(_, count)| *count > 0)
            .collect::<Vec<_>>(),
        "one outcome per person: sent, no address, failed"
    );
}

/// An admin (who may target everyone) and `people` generated people, some without an address.
async fn a_people_import_survives_killed_nodes(db: TestDatabase) {
    // 3,000 good rows, every 100th row also repeated at the end: 30 batches of 100 rows
    // and three problems.
    let admin = add_user(&db, "ada", Role::Admin).await;
    let mut csv = active_people_csv("K", 3_000);
    for n in [0, 1_000, 2_000] {
        csv.extend_from_slice(format!("K{n},Again,Again,ACTIVE\n").as_bytes());
    }
    let store = Store::new(db.conn.clone());
    let task = import_started(&db, &store, admin.id, &csv).await;

    let run = run_with_kills(&db, &store, task.id, 3_003, 100, &[]).await;

    let progress = ImportProgress::of(&run.task.execution_state);
    println!(
        "{}: people import of 3,003 rows, killed {} times: {:?}, {} problems in {:.1} s",
        backend(&db),
        run.kills,
        progress.counts,
        progress.problems,
        run.elapsed.as_secs_f64()
    );
    // No row applied twice (a second apply would count it unchanged) or skipped.
    assert_eq!(
        (
            progress.counts.created,
            progress.counts.unchanged,
            progress.problems
        ),
        (3_000, 0, 3)
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 3_000);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE first_name = 'Again'")
            .await,
        0
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import_problem")
            .await,
        3
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import_seen").await
            + db.scalar("SELECT COUNT(*) FROM people_import_chunk").await,
        0,
        "the finished import let its file and claims go"
    );
}

async fn admin_with_people(db: &TestDatabase, people: i64) -> StaffUser {
    let user = add_user(db, "ada", Role::Admin).await;
    let options = SeedOptions {
        people: people as u64,
        seed: 7,
        coaches: vec![],
    };
    seed_people(&db.conn, &options).await.unwrap();
    user
}

/// Everyone, as a saved query.
fn everyone() -> TargetRequest {
    TargetRequest {
        query: Some(PersonFilter::default()),
        ..TargetRequest::default()
    }
}

fn backend(db: &TestDatabase) -> String {
    format!("{:?}", db.backend).to_lowercase()
}

/// The rows `table` (a history of moves, one per person and task) holds for `task_id`: how
/// many, for how many people, and how many people have more than one.
async fn history_of_task(db: &TestDatabase, table: &str, task_id: Uuid) -> (i64, i64, i64) {
    let rows = format!("SELECT COUNT(*) FROM {table} WHERE task_id = $1");
    let people = format!("SELECT COUNT(DISTINCT person_id) FROM {table} WHERE task_id = $1");
    let repeated = format!(
        "SELECT COUNT(*) FROM (SELECT person_id FROM {table} WHERE task_id = $1 \
         GROUP BY person_id HAVING COUNT(*) > 1) AS repeated"
    );
    (
        count_for_task(db, &rows, task_id).await,
        count_for_task(db, &people, task_id).await,
        count_for_task(db, &repeated, task_id).await,
    )
}

/// How many people of the task have each outcome (by code, ascending, present ones only).
/// How many people the owner's download of the task's outcomes lists with each outcome code,
/// by code: every page, as `GET /api/1/tasks/{id}/outcomes` reads them.
async fn outcomes_of_task(db: &TestDatabase, task_id: Uuid, kind: ActionKind) -> Vec<(i16, i64)> {
    let mut counts = std::collections::BTreeMap::new();
    let mut people = HashSet::new();
    let mut after = None;
    loop {
        let page = caseload::outcomes::page(&db.conn, task_id, kind, after, 700)
            .await
            .expect("read a page of outcomes");
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.person_id);
        for line in page {
            assert!(
                people.insert(line.person_id),
                "{} listed twice",
                line.person_id
            );
            *counts.entry(line.outcome.code()).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}

/// Runs a query with the task's id bound as `$1` (both backends accept `$1`) and returns its
/// single integer. Bound, the id is compared in whatever form the backend stores UUIDs.
async fn count_for_task(db: &TestDatabase, sql: &str, task_id: Uuid) -> i64 {
    let statement =
        Statement::from_sql_and_values(db.conn.get_database_backend(), sql, [task_id.into()]);
    db.conn
        .query_one_raw(statement)
        .await
        .expect("run the query")
        .expect("the query returns a row")
        .try_get_by_index::<i64>(0)
        .expect("an integer column")
}

/// What [`run_with_kills`] saw.
struct Run {
    kills: usize,
    /// The completed task.
    task: Task,
    elapsed: Duration,
}

impl Run {
    fn summary(&self) -> String {
        format!(
            "{} kills, {} attempts, {:.1} s",
            self.kills,
            self.task.attempt,
            self.elapsed.as_secs_f64()
        )
    }

    fn report(&self) -> ActionReport {
        task_report(&self.task).expect("a finished bulk action has a report")
    }
}

/// Runs the task on a node (working in batches of `batch_size` people) that is SIGKILLed
/// once each share of [`KILL_AT`] of the `total` people is done and started again, then lets
/// the last incarnation finish the task.
async fn run_with_kills(
    db: &TestDatabase,
    store: &Store,
    task_id: Uuid,
    total: i64,
    batch_size: i64,
    extra_args: &[&str],
) -> Run {
    let batch_size = batch_size.to_string();
    // The kills are the test's, not the task's doing: it must not be parked as their cause.
    let kill_budget = (KILL_AT.len() + 1).to_string();
    let extra_args = [
        &["--batch-size", batch_size.as_str()],
        &["--park-after-crashes", kill_budget.as_str()],
        extra_args,
    ]
    .concat();
    let scratch = ScratchDir::new();
    let started = Instant::now();
    let mut done_at_last_kill = 0;
    for share in KILL_AT {
        let mut node = scratch.start_node(&db.url, SYSTEM_ID, &extra_args);
        // Past the share, and past the last kill: this incarnation has done work of its own.
        let threshold = ((total as f64 * share) as i64).max(done_at_last_kill + 1);
        let what = format!("{threshold} of {total} people done");
        wait_for(store, task_id, &mut node, &what, |t| {
            t.progress_done >= threshold
        })
        .await;
        kill(&mut node).await;
        let killed = task(store, task_id).await;
        assert_eq!(
            killed.workflow_status,
            TaskStatus::Executing,
            "killed mid-task, at {}/{total}",
            killed.progress_done
        );
        assert!(killed.progress_done < total, "killed before the end");
        done_at_last_kill = killed.progress_done;
    }
    let mut node = scratch.start_node(&db.url, SYSTEM_ID, &extra_args);
    let done = wait_for(store, task_id, &mut node, "the task completed", |t| {
        t.workflow_status == TaskStatus::Completed
    })
    .await;
    kill(&mut node).await;
    assert_eq!(done.progress_done, total, "every person was visited");
    assert_eq!(
        done.attempt,
        KILL_AT.len() as i32 + 1,
        "one attempt per incarnation: each kill interrupted a running attempt"
    );
    Run {
        kills: KILL_AT.len(),
        task: done,
        elapsed: started.elapsed(),
    }
}

async fn task(store: &Store, task_id: Uuid) -> Task {
    store
        .task_get(task_id)
        .await
        .unwrap()
        .expect("the task exists")
}

/// Polls the task until `done` holds and returns it; fails if the task ends otherwise, the
/// node exits, or [`PATIENCE`] runs out.
async fn wait_for(
    store: &Store,
    task_id: Uuid,
    node: &mut Child,
    what: &str,
    done: impl Fn(&Task) -> bool,
) -> Task {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let task = task(store, task_id).await;
        if done(&task) {
            return task;
        }
        let status = task.workflow_status;
        assert!(
            !status.is_terminal(),
            "waiting for {what}, the task ended {status}: {:?}",
            task.workflow_status_desc
        );
        if let Some(exit) = node.try_wait().expect("look at the node") {
            panic!("waiting for {what}, the node exited ({exit})");
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what}: {status} at {}/{:?}",
            task.progress_done,
            task.progress_total
        );
        tokio::time::sleep(POLL).await;
    }
}
