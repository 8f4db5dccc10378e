//! Rolling restarts are routine: every node restarted in turn (SIGTERM, as a deploy sends,
//! then started again under the same name) while many small tasks and one long status
//! change run. Nothing is lost, doubled or parked, no attempt is spent and no crash is
//! counted. Three nodes on PostgreSQL; on SQLite its one node, restarted twice.
//!
//! `make test` runs a short form; `BULKQ_ROLLING_TASKS=2000 BULKQ_ROLLING_PEOPLE=100000`
//! the full one.

use std::time::{Duration, Instant};

use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::{ActionRequest, StatusChangeRequest, TargetRequest};
use caseload::actions::task_for;
use caseload::actions::task_report;
use caseload::users::{Role, StaffUser};
use migration::Migrator;
use queue::testing::{Backend, TestDatabase};
use queue::{Store, TaskStatus};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use uuid::Uuid;

use crate::cluster::{
    all_tasks, effect_errors, enqueue_status_changes, history_rows, people_all_active, unfinished,
    wait_for,
};
use crate::helpers::{NODE_LIMITS, add_user};
use crate::nodes::{ScratchDir, kill, terminate};

queue::backend_tests!(Migrator => restarting_every_node_in_turn_loses_doubles_and_parks_nothing);

/// Small tasks (two people each) unless `BULKQ_ROLLING_TASKS` says otherwise.
const SMALL_TASKS_DEFAULT: usize = 300;
/// People of the long status change unless `BULKQ_ROLLING_PEOPLE` says otherwise.
const LONG_CHANGE_DEFAULT: usize = 6_000;
/// People a small task changes.
const PEOPLE_PER_SMALL_TASK: usize = 2;
/// How long a node must have worked (people changed since the last restart) before the next.
const WORK_BETWEEN_RESTARTS: i64 = 300;
/// The longest the test waits for anything.
const PATIENCE: Duration = Duration::from_secs(600);

fn from_env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|n| n.parse().unwrap_or_else(|_| panic!("{name} is a number")))
        .unwrap_or(default)
}

async fn restarting_every_node_in_turn_loses_doubles_and_parks_nothing(db: TestDatabase) {
    let small_tasks = from_env("BULKQ_ROLLING_TASKS", SMALL_TASKS_DEFAULT);
    let long_change = from_env("BULKQ_ROLLING_PEOPLE", LONG_CHANGE_DEFAULT);
    let user = add_user(&db, "deployer", Role::Admin).await;
    let people = people_all_active(&db, small_tasks * PEOPLE_PER_SMALL_TASK + long_change).await;
    let (long, small) = people.split_at(long_change);
    let targets: Vec<Vec<Uuid>> = small
        .chunks(PEOPLE_PER_SMALL_TASK)
        .map(<[_]>::to_vec)
        .collect();
    let store = Store::new(db.conn.clone());
    let long_task = enqueue_long_change(&db, &store, &user, long).await;
    let mut task_of_person = enqueue_status_changes(&store, &user, &targets).await;
    task_of_person.extend(long.iter().map(|person| (*person, long_task)));

    let names: &[&str] = match db.backend {
        Backend::Postgres => &["node-a", "node-b", "node-c"],
        Backend::Sqlite => &["node-a"],
    };
    let restarts = names.len().max(2);
    let scratch = ScratchDir::new();
    let args = ["--batch-size", "100"];
    let mut nodes = scratch.start_nodes(&db.url, names, &args);
    let started = Instant::now();
    let mut changed_at_last_restart = 0;
    for restart in 0..restarts {
        let before = changed_at_last_restart;
        wait_for(&db, "the nodes to work a while", |db| async move {
            changed(db).await >= before + WORK_BETWEEN_RESTARTS
        })
        .await;
        changed_at_last_restart = changed(&db).await;
        assert!(
            unfinished(&db).await > 0,
            "restart {restart} came while work remained"
        );
        let at = restart % names.len();
        terminate(&nodes[at]).await;
        let exit = tokio::time::timeout(PATIENCE, nodes[at].wait())
            .await
            .expect("a node stops on SIGTERM")
            .expect("reap the node");
        assert!(exit.success(), "{} exits cleanly: {exit}", names[at]);
        nodes[at] = scratch.start_node(&db.url, names[at], &args);
    }
    wait_for(&db, "every task to finish", |db| async move {
        unfinished(db).await == 0
    })
    .await;
    for node in &mut nodes {
        kill(node).await;
    }

    let tasks = all_tasks(&store).await;
    let history = history_rows(&db.conn).await;
    println!(
        "rolling restart: {restarts} restarts of {} node(s), {} tasks ({} people) in {:.1} s",
        names.len(),
        tasks.len(),
        history.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        effect_errors(&task_of_person, &history),
        (0, 0, 0),
        "every person changed once by their own task"
    );
    for task in &tasks {
        assert_eq!(
            task.workflow_status,
            TaskStatus::Completed,
            "{}: {:?}",
            task.id,
            task.workflow_status_desc
        );
        assert_eq!(task.attempt, 1, "{}: a restart spends no attempt", task.id);
        let report = task_report(task).expect("a report");
        let targeted = task_of_person.values().filter(|id| **id == task.id).count();
        assert_eq!(
            (report.changed, report.unchanged),
            (targeted as u64, 0),
            "{}: each person counted once",
            task.id
        );
    }
    assert_eq!(
        db.scalar("SELECT COALESCE(SUM(crash_count), 0) FROM queue_task")
            .await,
        0,
        "a restart is not a crash"
    );
}

/// Where the long change's people start: a status of their own, so that a saved query
/// names exactly them (a list of ids is capped at 10,000; a whole caseload goes as a query).
const LONG_CHANGE_FROM: &str = "WITHDRAWN";

/// Moves `long` (the first people by id) to [`LONG_CHANGE_FROM`] and enqueues the change of
/// everyone in it to INACTIVE; returns the task's id.
async fn enqueue_long_change(
    db: &TestDatabase,
    store: &Store,
    user: &StaffUser,
    long: &[Uuid],
) -> Uuid {
    let backend = db.conn.get_database_backend();
    let last = *long.last().expect("a long change of someone");
    let sql = format!(
        "UPDATE person SET program_status = '{LONG_CHANGE_FROM}' WHERE id <= {}",
        match backend {
            DbBackend::Postgres => "$1",
            _ => "?",
        }
    );
    db.conn
        .execute_raw(Statement::from_sql_and_values(backend, sql, [last.into()]))
        .await
        .unwrap();
    let request = StatusChangeRequest {
        target: TargetRequest {
            query: Some(PersonFilter {
                program_status: Some(LONG_CHANGE_FROM.into()),
                ..PersonFilter::default()
            }),
            ..TargetRequest::default()
        },
        to_status: "INACTIVE".into(),
        reason: "rolling restart".into(),
        ..StatusChangeRequest::default()
    };
    let mut txn = store.begin_queue().await.unwrap();
    let request = ActionRequest::ProgramStatusChange(request);
    let task = task_for(&*txn, user, request, &NODE_LIMITS).await.unwrap();
    let row = txn.enqueue(task).await.unwrap();
    txn.commit().await.unwrap();
    row.id
}

/// People changed so far, by any task.
async fn changed(db: &TestDatabase) -> i64 {
    db.scalar("SELECT COUNT(*) FROM program_status_change")
        .await
}
