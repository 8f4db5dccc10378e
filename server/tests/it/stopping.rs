//! A node told to stop (SIGTERM, as a deploy or `systemctl restart` sends) stops at once and
//! cleanly whatever is open: a live stream is told to reconnect and ends, the running bulk
//! action is handed back at its checkpoint without spending an attempt or counting as a
//! crash, and the node started next finishes it with every person changed once.
//!
//! A stream once kept its node running for good: the HTTP server waited for every open
//! connection, and a stream never ends by itself.

use std::net::SocketAddr;
use std::time::Duration;

use caseload::actions::task_report;
use caseload::users::Role;
use caseload::users::tokens::{NewToken, create_token};
use migration::Migrator;
use queue::testing::{Backend, TestDatabase};
use queue::{Store, TaskStatus};
use sea_orm::{ConnectionTrait, Statement};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use uuid::Uuid;

use crate::cluster::{enqueue_status_changes, history_rows, people_all_active, wait_for_task};
use crate::helpers::{add_user, shell};
use crate::nodes::{ScratchDir, kill, terminate};

queue::backend_tests!(Migrator => a_stopping_node_ends_its_streams_and_hands_its_task_on);

/// A stop that arrives while the node is still starting (here waiting for the write lock the
/// test holds on its SQLite file) is kept: the node finishes starting, drains at once and
/// exits 0. SIGTERM's default action used to kill it, mid-start, with the queue perhaps
/// already claiming.
#[tokio::test]
async fn a_stop_during_start_up_is_a_drain_not_a_kill() {
    let db = TestDatabase::create::<Migrator>(Backend::Sqlite)
        .await
        .expect("a SQLite database");
    let lock = queue::database::begin_immediate(&db.conn)
        .await
        .expect("hold the write lock");
    let scratch = ScratchDir::new();
    let mut node = scratch.start_node(&db.url, "starting", &[]);
    let pid = node.id().expect("the node runs");
    // Once it has the database open it is past installing its signal handlers.
    let file = db.url.trim_start_matches("sqlite://");
    let file = file.split('?').next().unwrap_or(file).to_owned();
    let opened = tokio::time::timeout(STOPS_WITHIN, async {
        while !has_open(pid, &file) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(opened.is_ok(), "the node opened its database");
    terminate(&node).await;
    lock.commit().await.expect("let the node go on");
    let exit = tokio::time::timeout(STOPS_WITHIN, node.wait())
        .await
        .expect("the node stops")
        .expect("reap the node");
    assert!(exit.success(), "a clean exit: {exit}");
}

/// Whether process `pid` has `file` open.
fn has_open(pid: u32, file: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .any(|target| target.to_string_lossy() == file)
}

/// The stopping node's grace period: far longer than its stop takes, so a node that waits
/// out the grace (as one with an open stream did) fails the test's wait.
const GRACE: &str = "300s";
/// How long the stop may take here: a batch and the stream's goodbye, with plenty of room
/// for a loaded machine; well inside [`GRACE`].
const STOPS_WITHIN: Duration = Duration::from_secs(60);

async fn a_stopping_node_ends_its_streams_and_hands_its_task_on(db: TestDatabase) {
    // 100 batches of 50: several seconds on the debug build, so the stop lands mid-task.
    let (total, batch_size) = (5_000, "50");
    let user = add_user(&db, "stopper", Role::Admin).await;
    let (_, token) = create_token(
        &db.conn,
        &shell(),
        user.id,
        NewToken {
            name: "dashboard".into(),
            can_act: false,
            expires_in_days: None,
        },
    )
    .await
    .unwrap();
    let people = people_all_active(&db, total).await;
    let store = Store::new(db.conn.clone());
    let task_of_person = enqueue_status_changes(&store, &user, &[people]).await;
    let task_id = *task_of_person.values().next().expect("one task");

    let scratch = ScratchDir::new();
    let args = ["--batch-size", batch_size, "--shutdown-grace", GRACE];
    let (mut first, address) = scratch
        .start_listening_node(&db.url, "stopping", &args)
        .await;
    let stream = open_task_stream(address, &token).await;
    let progressed = wait_for_task(&store, task_id, "a tenth done", |task| {
        task.progress_done >= total as i64 / 10
    })
    .await;
    assert_eq!(progressed.workflow_status, TaskStatus::Executing);

    terminate(&first).await;
    let said = tokio::time::timeout(STOPS_WITHIN, read_to_end(stream))
        .await
        .expect("the stream ends when its node stops");
    assert!(
        said.contains("event: reconnect") && said.contains("retry: 1000"),
        "the stream tells its page to reconnect: {said:?}"
    );
    let exit = tokio::time::timeout(STOPS_WITHIN, first.wait())
        .await
        .expect("the node stops without waiting out its grace period")
        .expect("reap the node");
    assert!(exit.success(), "a SIGTERMed node exits cleanly: {exit}");
    let handed_back = store.task_get(task_id).await.unwrap().expect("the task");
    assert_eq!(
        handed_back.workflow_status,
        TaskStatus::Queued,
        "handed back, not left to a rescue"
    );
    assert!(
        handed_back.progress_done < total as i64,
        "the stop came before the end: {}/{total}",
        handed_back.progress_done
    );
    let stopped = db
        .scalar(
            "SELECT COUNT(*) FROM queue_node WHERE system_id = 'stopping' \
             AND stopped_date IS NOT NULL",
        )
        .await;
    assert_eq!(stopped, 1, "the stopped node's row says so");

    // The next node (on SQLite, the same one restarted) carries on from the checkpoint.
    let mut next = scratch.start_node(&db.url, "next", &args);
    let done = wait_for_task(&store, task_id, "the task completed", |task| {
        task.workflow_status == TaskStatus::Completed
    })
    .await;
    kill(&mut next).await;
    let events = store.task_history(task_id).await.unwrap();
    assert!(
        events
            .iter()
            .filter_map(|event| event.message.as_deref())
            .any(|message| message.contains("handed back")),
        "the history records the hand-back"
    );
    assert!(
        !events
            .iter()
            .any(|event| matches!(event.status, TaskStatus::Failure | TaskStatus::Error)),
        "no failure was recorded"
    );
    assert_eq!(done.attempt, 1, "the handed-back attempt was not spent");
    assert_eq!(crash_count(&db, task_id).await, 0, "a stop is not a crash");
    assert_eq!(
        history_rows(&db.conn).await.len(),
        total,
        "one history row per person"
    );
    let report = task_report(&done).expect("a report");
    assert_eq!((report.changed, report.unchanged), (total as u64, 0));
}

/// How many nodes died while running the task (a stop is not a death).
async fn crash_count(db: &TestDatabase, task_id: Uuid) -> i32 {
    let backend = db.conn.get_database_backend();
    let sql = match backend {
        sea_orm::DbBackend::Postgres => "SELECT crash_count FROM queue_task WHERE id = $1",
        _ => "SELECT crash_count FROM queue_task WHERE id = ?",
    };
    let row = db
        .conn
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            sql,
            [task_id.into()],
        ))
        .await
        .unwrap()
        .expect("the task's row");
    row.try_get_by_index(0).unwrap()
}

/// A live task stream opened with `token`, its response head read (200).
async fn open_task_stream(address: SocketAddr, token: &str) -> BufReader<TcpStream> {
    let mut connection = TcpStream::connect(address).await.expect("connect");
    let request = format!(
        "GET /api/1/task-events HTTP/1.1\r\nHost: {address}\r\n\
         Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    connection.write_all(request.as_bytes()).await.unwrap();
    let mut stream = BufReader::new(connection);
    let mut status = String::new();
    stream.read_line(&mut status).await.unwrap();
    assert!(status.contains(" 200 "), "the stream opens: {status:?}");
    stream
}

/// Everything the server sends until it closes the connection.
async fn read_to_end(mut stream: BufReader<TcpStream>) -> String {
    let mut said = Vec::new();
    stream
        .read_to_end(&mut said)
        .await
        .expect("read the stream");
    String::from_utf8_lossy(&said).into_owned()
}
