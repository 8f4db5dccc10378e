//! The restore drill: `bulkq backup` taken while a node changes people is a database on
//! which a fresh node finishes every task committed before the backup, each person changed
//! exactly once; and the command's refusals.

use std::collections::HashMap;

use caseload::actions::task_report;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{Backend, TestDatabase};
use queue::{Store, TaskStatus};
use uuid::Uuid;

use crate::cluster::{
    all_tasks, effect_errors, enqueue_status_changes, history_rows, people_all_active, wait_for,
};
use crate::helpers::add_user;
use crate::nodes::{ScratchDir, bulkq, kill};

/// Status changes in the drill, and the people each changes, ten per batch: hundreds of
/// commits on the debug build, so the backup lands mid-work.
const TASKS: usize = 4;
const PEOPLE_PER_TASK: usize = 2_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_taken_mid_work_restores_and_finishes_every_task_once() {
    let db = TestDatabase::create::<Migrator>(Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    let total = TASKS * PEOPLE_PER_TASK;
    let user = add_user(&db, "operator", Role::Admin).await;
    let people = people_all_active(&db, total).await;
    let targets: Vec<Vec<Uuid>> = people.chunks(PEOPLE_PER_TASK).map(<[_]>::to_vec).collect();
    let task_of_person =
        enqueue_status_changes(&Store::new(db.conn.clone()), &user, &targets).await;

    let scratch = ScratchDir::new();
    let args = ["--batch-size", "10"];
    let mut node = scratch.start_node(&db.url, "office", &args);
    wait_for(&db, "some people changed", |db| async move {
        db.scalar("SELECT COUNT(*) FROM program_status_change")
            .await
            > 0
    })
    .await;
    let copy = scratch.path("backup.db");
    let (ok, said) = bulkq(&[
        "backup",
        "--database-url",
        &db.url,
        "--to",
        &copy.display().to_string(),
    ])
    .await;
    assert!(ok, "the backup succeeds: {said}");
    kill(&mut node).await;

    let restored_url = format!("sqlite://{}?mode=rw", copy.display());
    let restored = queue::database::connect(&restored_url, 2).await.unwrap();
    let store = Store::new(restored.clone());
    let at_backup = history_rows(&restored).await.len();
    assert!(
        0 < at_backup && at_backup < total,
        "the backup was taken mid-work: {at_backup} of {total} changed"
    );
    assert_eq!(
        all_tasks(&store).await.len(),
        TASKS,
        "every task is in the copy"
    );
    // Started as the same node, it takes back at once what the copy shows it running.
    let mut next = scratch.start_node(&restored_url, "office", &args);
    wait_for_all_completed(&store).await;
    kill(&mut next).await;

    let history = history_rows(&restored).await;
    assert_eq!(
        effect_errors(&task_of_person, &history),
        (0, 0, 0),
        "every person changed once by their own task, none lost, none twice"
    );
    for task in all_tasks(&store).await {
        let report = task_report(&task).expect("a finished bulk action has a report");
        assert_eq!(
            (report.changed, report.unchanged),
            (PEOPLE_PER_TASK as u64, 0),
            "the report of {} counts each person once",
            task.id
        );
    }
}

#[tokio::test]
async fn backup_refuses_what_it_cannot_copy_safely() {
    let scratch = ScratchDir::new();
    let existing = scratch.path("existing.db");
    std::fs::write(&existing, b"keep me").unwrap();
    let existing = existing.display().to_string();
    let source = format!("sqlite://{}?mode=rwc", scratch.path("source.db").display());

    let (ok, said) = bulkq(&["backup", "--database-url", &source, "--to", &existing]).await;
    assert!(!ok && said.contains("no SQLite database file"), "{said}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");

    bulkq(&["migrate", "--database-url", &source]).await;
    let (ok, said) = bulkq(&["backup", "--database-url", &source, "--to", &existing]).await;
    assert!(!ok && said.contains("exists already"), "{said}");
    assert_eq!(
        std::fs::read(&existing).unwrap(),
        b"keep me",
        "never overwritten"
    );

    let postgres = "postgres://backup:secret@127.0.0.1:5432/bulkq";
    let (ok, said) = bulkq(&["backup", "--database-url", postgres, "--to", "out.dump"]).await;
    assert!(!ok, "no copy was made: {said}");
    assert!(
        said.contains("pg_dump --format=custom --file out.dump") && !said.contains("secret"),
        "says what to run, without the password: {said}"
    );
}

/// Waits until every task of `store` has completed; fails if one ends otherwise.
async fn wait_for_all_completed(store: &Store) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let tasks = all_tasks(store).await;
        let statuses: HashMap<Uuid, TaskStatus> = tasks
            .iter()
            .map(|task| (task.id, task.workflow_status))
            .collect();
        assert!(
            !statuses
                .values()
                .any(|status| status.is_terminal() && *status != TaskStatus::Completed),
            "a task ended otherwise: {statuses:?}"
        );
        if statuses
            .values()
            .all(|status| *status == TaskStatus::Completed)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tasks still running: {statuses:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
