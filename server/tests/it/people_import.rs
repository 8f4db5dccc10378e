//! The CSV import of people from a shell (`bulkq import people`): a file with every kind of
//! bad row imports exactly its good ones and reports the rest by line, the same file again
//! changes nothing, a full sync retires who the file lacks, an import handed back part way
//! resumes without applying a row twice, and files that cannot be read apply nothing; on
//! the dashboard, an upload is refused whole or stored, previewed, imported once and its
//! error report downloaded, and uploads no task needs are found for deletion; and a first
//! import refreshes the planner's statistics as it fills the caseload.

use std::path::{Path, PathBuf};
use std::time::Duration;

use app::api::imports::ImportDraft;
use app::api::ssr::BulkSettings;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use bulkq_types::actions::PEOPLE_IMPORT;
use caseload::people_import::cleanup::stale_uploads;
use caseload::people_import::preview::preview;
use caseload::people_import::start::start_import;
use caseload::people_import::{FilePosition, ImportProgress, ImportSpec, RowReader, WINDOW_BYTES};
use caseload::users::Role;
use migration::Migrator;
use queue::testing::{TestDatabase, fast_config, wait_until};
use queue::{Registry, Runtime, Store, TaskStatus};
use sea_orm::ConnectionTrait;
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use server::config::ImportPeopleArgs;
use server::database_target::DatabaseTarget;
use server::import_command::import_people;

use crate::helpers::*;

queue::backend_tests!(Migrator =>
    a_file_with_every_bad_row_imports_its_good_rows_once,
    an_import_handed_back_part_way_resumes_where_it_stopped,
    files_that_cannot_be_read_apply_nothing,
    the_dashboard_uploads_previews_imports_once_and_reports,
    a_file_longer_than_a_window_is_read_once_row_by_row,
    a_first_import_leaves_people_planned_by_their_number,
);

/// Good rows S1, S2 (with a quoted newline in a column the import ignores) and S7; bad
/// rows of every kind; a byte order mark, CRLF line ends and a blank line.
fn messy_file() -> Vec<u8> {
    let mut file = b"\xEF\xBB\xBF".to_vec();
    file.extend_from_slice(
        b"Student ID,First name,Last name,Email,Status,Coach,Notes\r\n\
S1,Ada,Lovelace,ada@example.edu,ACTIVE,sam,\r\n\
S2,Alan,Turing,,ACTIVE,,\"two\r\nlines\"\r\n\
S3,Grace,Hopper,,ON_MARS,,\r\n\
S1,Ada,Again,,ACTIVE,,\r\n\
S4,Edsger,Dijkstra,,ACTIVE,nobody,\r\n\
S5,=HYPERLINK(\"x\"),Evil,,ACTIVE,,\r\n\
S6,Jos\xE9,Latin,,ACTIVE,,\r\n\
\r\n\
S7,Barbara,Liskov,,GRADUATED,,\r\n",
    );
    file
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn args(file: PathBuf) -> ImportPeopleArgs {
    ImportPeopleArgs {
        file,
        as_user: "ada".into(),
        dry_run: false,
        full_sync: false,
        max_bytes: 1 << 20,
        batch_size: 2,
        report: None,
    }
}

async fn a_file_with_every_bad_row_imports_its_good_rows_once(db: TestDatabase) {
    add_user(&db, "sam", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "people.csv", &messy_file());

    import_people(
        &DatabaseTarget::at(db.url.as_str()),
        ImportPeopleArgs {
            dry_run: true,
            ..args(file.clone())
        },
    )
    .await
    .unwrap();
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person").await,
        0,
        "a dry run changes nothing"
    );
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import").await,
        0,
        "nor keeps the file"
    );

    let report = dir.path().join("problems.csv");
    import_people(
        &DatabaseTarget::at(db.url.as_str()),
        ImportPeopleArgs {
            report: Some(report.clone()),
            ..args(file.clone())
        },
    )
    .await
    .unwrap();
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 3);
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM person p JOIN staff_user u ON u.id = p.coach_id \
                   WHERE p.school_id = 'S1' AND p.last_name = 'Lovelace' AND u.username = 'sam'"
        )
        .await,
        1,
        "the first S1 is imported, the repeat is not"
    );
    let report = std::fs::read_to_string(&report).unwrap();
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[0], "line,school_id,problem");
    let problem_lines: Vec<&str> = lines[1..]
        .iter()
        .map(|line| line.split(',').next().unwrap())
        .collect();
    assert_eq!(problem_lines, ["5", "6", "7", "8", "9"], "{report}");
    for words in ["ON_MARS", "earlier row", "nobody", "formula", "not UTF-8"] {
        assert!(report.contains(words), "{words} in {report}");
    }

    // The same file again changes nothing.
    let changes = db
        .scalar("SELECT COUNT(*) FROM program_status_change")
        .await;
    import_people(&DatabaseTarget::at(db.url.as_str()), args(file.clone()))
        .await
        .unwrap();
    let progress = last_import_progress(&db).await;
    assert_eq!(
        (
            progress.counts.created,
            progress.counts.changed,
            progress.counts.unchanged
        ),
        (0, 0, 3)
    );
    assert_eq!(progress.problems, 5);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM program_status_change")
            .await,
        changes
    );

    // A full sync of a file without S7 retires S7 only.
    let fewer =
        String::from_utf8_lossy(&messy_file()).replace("S7,Barbara,Liskov,,GRADUATED,,\r\n", "");
    let fewer = write(dir.path(), "fewer.csv", fewer.as_bytes());
    import_people(
        &DatabaseTarget::at(db.url.as_str()),
        ImportPeopleArgs {
            full_sync: true,
            ..args(fewer)
        },
    )
    .await
    .unwrap();
    assert_eq!(last_import_progress(&db).await.counts.retired, 1);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM person WHERE program_status = 'RETIRED'")
            .await,
        1
    );
    assert_eq!(
        db.scalar(
            "SELECT COUNT(*) FROM person WHERE school_id = 'S7' AND program_status = 'RETIRED'"
        )
        .await,
        1
    );
}

/// Runs import tasks, `batch_size` rows per batch, on a runtime named `node` until the
/// task `task_id` has completed.
async fn finish_import(store: &Store, task_id: uuid::Uuid, batch_size: u64, node: &str) {
    let mut events = store.subscribe().await.unwrap();
    let mut registry = Registry::new();
    caseload::actions::executors_for_import(&mut registry, batch_size);
    let runtime = Runtime::start(fast_config(node), store.clone(), registry)
        .await
        .unwrap();
    wait_until(
        &mut events,
        Duration::from_secs(60),
        "the import finished",
        async || {
            let task = store.task_get(task_id).await.unwrap().unwrap();
            task.workflow_status == TaskStatus::Completed
        },
    )
    .await;
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// Starts a node with no executors and stops it once the prune its first start runs (an
/// interval job is due when first registered) is over; the next is minutes away.
async fn first_prune_over(store: &Store) {
    let mut events = store.subscribe().await.unwrap();
    let runtime = Runtime::start(fast_config("first-prune"), store.clone(), Registry::new())
        .await
        .unwrap();
    wait_until(
        &mut events,
        Duration::from_secs(30),
        "the first prune",
        async || {
            let jobs = store.periodic_list().await.unwrap();
            jobs.iter()
                .any(|job| job.name == "queue.prune" && job.last_result.is_some())
        },
    )
    .await;
    runtime.shutdown(Duration::from_secs(5)).await;
}

/// The progress of the import task finished last.
async fn last_import_progress(db: &TestDatabase) -> ImportProgress {
    let store = Store::new(db.conn.clone());
    let tasks = store
        .task_list(
            &queue::TaskFilter {
                component: Some(PEOPLE_IMPORT.into()),
                ..Default::default()
            },
            queue::Page::first(1),
        )
        .await
        .unwrap();
    ImportProgress::of(&tasks[0].execution_state)
}

async fn an_import_handed_back_part_way_resumes_where_it_stopped(db: TestDatabase) {
    add_user(&db, "sam", Role::Staff).await;
    let admin = add_user(&db, "ada", Role::Admin).await;
    let mut csv = active_people_csv("R", 1_500);
    csv.extend_from_slice(b"R3,Again,Repeat,ACTIVE\n");
    let store = Store::new(db.conn.clone());
    let upload = uploaded(&store, admin.id, &csv).await;
    let seen = preview(&db.conn, &upload, None, false).await.unwrap();
    assert_eq!(
        (seen.rows, seen.counts.created, seen.problem_count),
        (1_501, 1_500, 1)
    );
    let spec = ImportSpec::of(&upload, &seen, false);
    let by = caseload::audit::Actor::staff(admin.id, "ada", "");
    let task = start_import(&store, &by, &spec).await.unwrap();

    let mut events = store.subscribe().await.unwrap();
    let mut registry = Registry::new();
    caseload::actions::executors_for_import(&mut registry, 3);
    let first = Runtime::start(fast_config("import-a"), store.clone(), registry)
        .await
        .unwrap();
    wait_until(
        &mut events,
        Duration::from_secs(60),
        "a few batches are in",
        async || {
            let task = store.task_get(task.id).await.unwrap().unwrap();
            task.progress_done >= 9
        },
    )
    .await;
    // No grace: the running import is handed back at its next batch.
    first.shutdown(Duration::ZERO).await;
    let handed_back = store.task_get(task.id).await.unwrap().unwrap();
    assert!(
        handed_back.progress_done < 1_501,
        "stopped part way: {}",
        handed_back.progress_done
    );

    finish_import(&store, task.id, 3, "import-b").await;
    let done = ImportProgress::of(
        &store
            .task_get(task.id)
            .await
            .unwrap()
            .unwrap()
            .execution_state,
    );
    assert_eq!(
        (done.rows, done.counts.created, done.problems),
        (1_501, 1_500, 1)
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 1_500);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import_problem")
            .await,
        1
    );
}

async fn files_that_cannot_be_read_apply_nothing(db: TestDatabase) {
    add_user(&db, "ada", Role::Admin).await;
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes, words) in [
        ("empty.csv", b"".to_vec(), "empty"),
        ("utf16.csv", b"\xFF\xFEs\0c\0".to_vec(), "UTF-16"),
        (
            "columns.csv",
            b"id,name\n1,Ada\n".to_vec(),
            "required field",
        ),
        ("big.csv", vec![b'x'; 2 << 20], "over the limit"),
    ] {
        let file = write(dir.path(), name, &bytes);
        let error = import_people(&DatabaseTarget::at(db.url.as_str()), args(file))
            .await
            .unwrap_err();
        assert!(format!("{error:#}").contains(words), "{name}: {error:#}");
    }
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 0);
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import").await,
        0,
        "nothing kept"
    );
}

/// A browser's multipart form upload of `bytes` as the file field `field`.
fn upload_form(field: &str, bytes: &[u8], cookie: &str) -> Request<Body> {
    let mut body = format!(
        "--XFORMX\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"people.csv\"\r\n\
         Content-Type: text/csv\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(b"\r\n--XFORMX--\r\n");
    Request::post("/admin/imports/upload")
        .header(header::CONTENT_TYPE, "multipart/form-data; boundary=XFORMX")
        .header(header::COOKIE, cookie)
        .body(Body::from(body))
        .unwrap()
}

/// Where an upload sent the browser: its preview's upload id, or the reason it was refused.
fn upload_outcome(response: &axum::http::Response<()>) -> Result<uuid::Uuid, String> {
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()[header::LOCATION].to_str().unwrap();
    match location.strip_prefix("/admin/imports/") {
        Some(id) => Ok(id.parse().unwrap()),
        None => Err(percent_encoding::percent_decode_str(location)
            .decode_utf8_lossy()
            .into_owned()),
    }
}

async fn the_dashboard_uploads_previews_imports_once_and_reports(db: TestDatabase) {
    let store = Store::new(db.conn.clone());
    let bulk = BulkSettings {
        import_max_bytes: 4_096,
        ..BulkSettings::default()
    };
    let app = app_with_settings(&db, store.clone(), bulk).await;
    add_user(&db, "ada", Role::Admin).await;
    let admin = sign_in_as(&app, "ada").await;
    let staff = sign_in_as(&app, "sam").await;

    let (response, body) = send(&app, upload_form("file", &messy_file(), &staff)).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    for (field, bytes, words) in [
        ("file", vec![b'x'; 5_000], "over the limit of 4096 bytes"),
        ("file", Vec::new(), "The file is empty"),
        ("notes", b"a,b\n".to_vec(), "Choose a CSV file"),
    ] {
        let (response, _) = send(&app, upload_form(field, &bytes, &admin)).await;
        let reason = upload_outcome(&response).unwrap_err();
        assert!(reason.contains(words), "{words} in {reason}");
    }
    let mut cut_off = upload_form("file", &messy_file(), &admin);
    *cut_off.body_mut() =
        Body::from("--XFORMX\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nS1,");
    let (response, _) = send(&app, cut_off).await;
    assert!(upload_outcome(&response).unwrap_err().contains("cut off"));
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM people_import").await,
        0,
        "nothing refused is kept"
    );

    let (response, _) = send(&app, upload_form("file", &messy_file(), &admin)).await;
    let upload_id = upload_outcome(&response).unwrap();
    let ask = |mapping: &str| {
        format!(r#"{{"upload_id":"{upload_id}","mapping":{mapping},"full_sync":false}}"#)
    };
    let (response, body) = send(
        &app,
        post_json("/api/imports/preview", &ask("null"), Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let draft: ImportDraft = serde_json::from_str(&body).unwrap();
    let preview = draft.preview.unwrap();
    assert_eq!(
        (preview.rows, preview.counts.created, preview.problem_count),
        (8, 3, 5)
    );
    let (response, body) = send(
        &app,
        post_json("/api/imports/preview", &ask("null"), Some(&staff)),
    )
    .await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);

    // Import, pressed twice: one task.
    let mapping = serde_json::to_string(&preview.mapping).unwrap();
    let (response, body) = send(
        &app,
        post_json("/api/imports/start", &ask(&mapping), Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    let task_id: uuid::Uuid = serde_json::from_str(&body).unwrap();
    let (response, body) = send(
        &app,
        post_json("/api/imports/start", &ask(&mapping), Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("imported already"), "{body}");

    finish_import(&store, task_id, 2, "dashboard-import").await;
    assert_eq!(db.scalar("SELECT COUNT(*) FROM person").await, 3);

    let report = format!("/admin/imports/{upload_id}/problems.csv");
    let (response, body) = send(&app, get(&report, Some(&staff))).await;
    assert_status(&response, &body, StatusCode::FORBIDDEN);
    let (response, body) = send(&app, get(&report, Some(&admin))).await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );
    let lines: Vec<&str> = body
        .lines()
        .map(|line| line.split(',').next().unwrap())
        .collect();
    assert_eq!(lines, ["line", "5", "6", "7", "8", "9"], "{body}");
    assert!(body.contains("looks like a spreadsheet formula"), "{body}");

    // Another upload, discarded; the imported one cannot be.
    let (response, _) = send(&app, upload_form("file", &messy_file(), &admin)).await;
    let second = upload_outcome(&response).unwrap();
    let discard = |id: uuid::Uuid| format!(r#"{{"upload_id":"{id}"}}"#);
    let (response, body) = send(
        &app,
        post_json("/api/imports/discard", &discard(upload_id), Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::CONFLICT);
    let (response, body) = send(
        &app,
        post_json("/api/imports/discard", &discard(second), Some(&admin)),
    )
    .await;
    assert_status(&response, &body, StatusCode::OK);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM people_import").await, 1);

    // The cleanup job's choice: an untaken upload once a day old, a taken one once its
    // task is gone.
    let (response, _) = send(&app, upload_form("file", &messy_file(), &admin)).await;
    let untaken = upload_outcome(&response).unwrap();
    let now = chrono::Utc::now();
    assert!(stale_uploads(&db.conn, now).await.unwrap().is_empty());
    let tomorrow = now + chrono::Duration::hours(25);
    assert_eq!(stale_uploads(&db.conn, tomorrow).await.unwrap(), [untaken]);
    let mut forget_task = Query::update();
    forget_task
        .table("people_import")
        .value("task_id", uuid::Uuid::now_v7())
        .and_where(Expr::col("id").eq(upload_id));
    db.conn.execute(&forget_task).await.unwrap();
    let mut stale = stale_uploads(&db.conn, now).await.unwrap();
    stale.sort();
    assert_eq!(stale, [upload_id]);
}

/// Batches read a file of several windows in order: every row once, on its own line,
/// whether it ends inside a window or runs past one (every 1,000th row holds a quoted
/// newline, so lines and rows differ).
async fn a_file_longer_than_a_window_is_read_once_row_by_row(db: TestDatabase) {
    let admin = add_user(&db, "ada", Role::Admin).await;
    let header = b"school_id,first_name,last_name,program_status,notes\n";
    let mut csv = header.to_vec();
    let mut rows = 0u64;
    while csv.len() < 2 * WINDOW_BYTES + 100_000 {
        let notes = if rows % 1_000 == 999 {
            "\"two\nlines\""
        } else {
            ""
        };
        csv.extend_from_slice(
            format!("W{rows},First{rows},Last{rows},ACTIVE,{notes}\n").as_bytes(),
        );
        rows += 1;
    }
    let store = Store::new(db.conn.clone());
    let upload = uploaded(&store, admin.id, &csv).await;
    let mut reader = RowReader::default();
    let mut at = FilePosition {
        offset: header.len() as u64,
        line: 2,
    };
    let (mut seen, mut line) = (0u64, 2u64);
    loop {
        let (batch, next, done) = reader
            .next_rows(&db.conn, &upload, at, 4_999)
            .await
            .unwrap();
        for row in &batch {
            let fields = row.fields.as_ref().unwrap();
            assert_eq!(fields[0], format!("W{seen}"));
            assert_eq!(row.line, line, "row {seen}");
            line = row.next_line;
            seen += 1;
        }
        at = next;
        if done {
            break;
        }
    }
    assert_eq!(seen, rows);
}

/// A first import fills `person` from nothing: on the way it refreshes the planner's
/// statistics, so statements planned while the caseload was empty are planned again by its
/// size (on PostgreSQL a look-up of 5,000 school ids had kept scanning every person). The
/// node starts while `person` is empty, and no other analysis may run during the import:
/// one after the first batch (500 people) leaves the import's refresh nothing to do (the
/// table has not grown tenfold since), so the test would depend on its timing. Hence
/// PostgreSQL's autovacuum is off for `person`, as it may be on a server, and the prune a
/// node's first start runs at once is over before the import is queued.
async fn a_first_import_leaves_people_planned_by_their_number(db: TestDatabase) {
    if db.backend == queue::testing::Backend::Postgres {
        db.conn
            .execute_unprepared("ALTER TABLE person SET (autovacuum_enabled = false)")
            .await
            .unwrap();
    }
    let admin = add_user(&db, "ada", Role::Admin).await;
    let store = Store::new(db.conn.clone());
    first_prune_over(&store).await;
    let task = import_started(&db, &store, admin.id, &active_people_csv("P", 1_500)).await;
    finish_import(&store, task.id, 500, "import-stats").await;

    let planned_people = people_the_planner_counts(&db).await;
    // SQLite's bounded analysis estimates (984 of 1,000, say); without the refresh the
    // planner would count none, or the few of a first batch.
    assert!(
        planned_people > 500,
        "the planner counts the people imported ({planned_people})"
    );
}
