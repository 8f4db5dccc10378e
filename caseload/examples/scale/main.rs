//! Measures the caseload at scale: seeding, search latency, and the bulk actions over
//! everyone, run by the queue with the real executors.
//!
//! ```text
//! cargo run --release -p caseload --example scale -- <database-url> <people> [seed|search|status|export|email|watch|alert|reassign|import]...
//! ```
//! With no step named, runs seed, search, status and export; run one step per process to see
//! its own peak RSS. `search`, `status`, `export` and `email` expect the people to exist;
//! `email` goes to everyone GRADUATED (about 100,000 at a million people, so run it before
//! `status`, which makes everyone INACTIVE), one message each over SMTP to a relay on
//! loopback that counts them. `alert` raises an early alert for everyone and tells their coaches.
//! `watch` makes a new user watch everyone named Ada, then, once other users keep a watch
//! of everyone, another new user the same: a Watch should not slow as the table grows.
//! `reassign` moves everyone to a new coach. Each of these steps also times its plain-SQL
//! floor after the engine (`floor.rs`; a change's on a copy of the database made before the
//! engine started, a Watch's by new users, email's to a relay of its own) and prints the
//! engine's time over it. `import`
//! brings in a generated CSV file of as many new people, then the same file again (which
//! changes nobody). Each step also prints one JSON line of figures (scenario "bulk"), as the
//! queue's benchmark does; `make bench` runs them all. `SCALE_BATCH_SIZE=N` runs the bulk
//! actions with N people per batch instead of the product's default.

mod floor;

use std::fmt::Write;
use std::time::{Duration, Instant};

use bulkq_types::alerts::AlertContent;
use bulkq_types::filter::PersonFilter;
use bulkq_types::people::{PageRequest, PersonPage};
use bulkq_types::requests::{
    ActionRequest, CoachReassignmentRequest, EarlyAlertRequest, EmailRequest, ExportRequest,
    StatusChangeRequest, TargetRequest, WatchRequest,
};
use caseload::actions::{
    ActionsConfig, BATCH_SIZE_DEFAULT, NodeLimits, export_file, submit, task_report,
};
use caseload::email::{MailTransport, Mailer, SmtpRelay};
use caseload::export::DEFAULT_ROW_CAP;
use caseload::people_import::preview::preview;
use caseload::people_import::start::start_import;
use caseload::people_import::upload::{Upload, UploadWriter};
use caseload::people_import::{ImportProgress, ImportSpec};
use caseload::search::{count_people_within, search_people};
use caseload::seed::{SeedOptions, seed_people};
use caseload::testing::{SmtpServer, watch_everyone};
use caseload::users::{NewStaffUser, Role, StaffUser, create_user, ids_with_role};
use migration::Migrator;
use queue::testing::peak_rss_mib;
use queue::{Registry, Runtime, RuntimeConfig, Store, Task};
use sea_orm::{Condition, ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use serde_json::json;
use uuid::Uuid;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, people, steps @ ..] = args.as_slice() else {
        return Err(
            "usage: scale <database-url> <people> [seed|search|status|export|email|watch|alert|reassign|import]..."
                .into(),
        );
    };
    let people: u64 = people.parse()?;
    let all = steps.is_empty();
    let wants = |step: &str| {
        (all && !["email", "watch", "import"].contains(&step)) || steps.iter().any(|s| s == step)
    };
    queue::database::migrate::<Migrator>(url).await?;
    let mut db = connect(url).await?;
    let coaches = coaches(&db).await?;
    if wants("seed") {
        let started = Instant::now();
        let added = seed_people(
            &db,
            &SeedOptions {
                people,
                seed: 42,
                coaches: coaches.clone(),
            },
        )
        .await?;
        let seconds = started.elapsed().as_secs_f64();
        println!("seed: {added} people in {seconds:.1} s");
        figures(&db, "seed", people, json!({ "seconds": seconds }));
        cut_name_ranges(&db).await?;
        analyze(&db).await?;
    }
    if wants("search") {
        search(&db, &coaches).await?;
    }
    if wants("status") {
        let change = floor::ColumnChange {
            column: "program_status",
            to: "INACTIVE".to_owned(),
            history_table: "program_status_change",
            history_columns: &[
                "id",
                "person_id",
                "from_status",
                "to_status",
                "reason",
                "changed_by",
                "changed_at",
                "task_id",
            ],
            history_extra: vec!["scale measurement".into()],
        };
        let copy;
        (copy, db) = copy_for_floor(url, db).await?;
        let engine = run_action(&db, "status change", everyone(), |target| {
            ActionRequest::ProgramStatusChange(StatusChangeRequest {
                target,
                to_status: change.to.clone(),
                reason: "scale measurement".into(),
                ..StatusChangeRequest::default()
            })
        })
        .await?;
        let floor = column_change_floor(copy, &change).await?;
        print_floor(&db, "status change", &floor, engine);
    }
    if wants("export") {
        let engine = run_action(&db, "export", everyone(), |target| {
            ActionRequest::Export(ExportRequest {
                target,
                ..ExportRequest::default()
            })
        })
        .await?;
        let file = std::env::temp_dir().join(format!("bulkq-scale-floor-{}.csv", Uuid::now_v7()));
        let floor = floor::export(&db, &file).await?;
        std::fs::remove_file(&file)?;
        print_floor(&db, "export", &floor, engine);
    }
    if wants("email") {
        let graduated = PersonFilter {
            program_status: Some("GRADUATED".into()),
            ..PersonFilter::default()
        };
        let content = caseload::email::EmailContent {
            subject: "Scale measurement".into(),
            body: "One message per person, to a relay on loopback.".into(),
            cc: Vec::new(),
        };
        let engine = run_action(&db, "email", graduated, |target| {
            ActionRequest::Email(EmailRequest {
                target,
                subject: content.subject.clone(),
                body: content.body.clone(),
                cc: Vec::new(),
                ..EmailRequest::default()
            })
        })
        .await?;
        let relay = SmtpServer::start_counting().await;
        let mailer = relay_mailer(&relay)?;
        let floor = floor::email(&db, &mailer, "GRADUATED", &content).await?;
        print_floor(&db, "email", &floor, engine);
    }
    if wants("watch") {
        watch(&db, people).await?;
    }
    if wants("alert") {
        let (course, reason) = ("Scale measurement", "LOW_GRADES");
        let copy;
        (copy, db) = copy_for_floor(url, db).await?;
        let engine = run_action(&db, "early alert", everyone(), |target| {
            ActionRequest::EarlyAlert(EarlyAlertRequest {
                target,
                alert: AlertContent {
                    course: course.into(),
                    reasons: vec![reason.into()],
                    ..AlertContent::default()
                },
                ..EarlyAlertRequest::default()
            })
        })
        .await?;
        let (copy_db, actor) = open_copy(&copy).await?;
        let floor = floor::early_alert(&copy_db, course, reason, actor, batch_size()?).await?;
        close_copy(copy, copy_db).await?;
        print_floor(&db, "early alert", &floor, engine);
    }
    if wants("reassign") {
        let coach = new_user(&db, "Scale coach", Role::Staff).await?;
        let change = floor::ColumnChange {
            column: "coach_id",
            to: Some(coach.id),
            history_table: "coach_change",
            history_columns: &[
                "id",
                "person_id",
                "from_coach_id",
                "to_coach_id",
                "changed_by",
                "changed_at",
                "task_id",
            ],
            history_extra: Vec::new(),
        };
        let copy;
        (copy, db) = copy_for_floor(url, db).await?;
        let engine = run_action(&db, "coach reassignment", everyone(), |target| {
            ActionRequest::CoachReassignment(CoachReassignmentRequest {
                target,
                to_coach: coach.username,
                ..CoachReassignmentRequest::default()
            })
        })
        .await?;
        let floor = column_change_floor(copy, &change).await?;
        print_floor(&db, "coach reassignment", &floor, engine);
    }
    if wants("import") {
        import(&db, people).await?;
    }
    println!("peak RSS: {:.0} MiB", peak_rss_mib());
    Ok(())
}

/// The staff users people are assigned to (created on first use).
async fn coaches(db: &DatabaseConnection) -> Result<Vec<Uuid>, Box<dyn std::error::Error>> {
    let existing = ids_with_role(db, Role::Staff).await?;
    if !existing.is_empty() {
        return Ok(existing);
    }
    let mut ids = Vec::new();
    for n in 0..20 {
        let user = create_user(
            db,
            NewStaffUser {
                username: format!("coach{n}"),
                display_name: format!("Coach {n}"),
                role: Role::Staff,
                password: "scale-password-long".into(),
            },
        )
        .await?;
        ids.push(user.id);
    }
    Ok(ids)
}

/// Cuts SQLite's name ranges as a node's job would within its first minute (ADR 0087), so
/// the searches find deep pages of a status as a running node does.
async fn cut_name_ranges(db: &DatabaseConnection) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let cuts = caseload::name_ranges::cut_grown_ranges(
        &Store::new(db.clone()),
        caseload::name_ranges::RANGE_PEOPLE,
    )
    .await?;
    if cuts > 0 {
        println!(
            "name ranges: {cuts} cuts in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Refreshes planner statistics, as autovacuum (PostgreSQL) or `PRAGMA optimize` would.
/// Statistics for the planner, and on PostgreSQL a checkpoint: otherwise the server writes
/// the seed's million rows out to disk while the next steps are timed (an email step that
/// takes 17 s alone took 48.7 s during that checkpoint).
async fn analyze(db: &DatabaseConnection) -> Result<(), sea_orm::DbErr> {
    let started = Instant::now();
    let sql = match db.get_database_backend() {
        DbBackend::Postgres => "VACUUM ANALYZE person, person_contains",
        _ => "ANALYZE",
    };
    db.execute_unprepared(sql).await?;
    println!("{sql}: {:.1} s", started.elapsed().as_secs_f64());
    if db.get_database_backend() == DbBackend::Postgres {
        let started = Instant::now();
        // Needs a superuser or pg_checkpoint; without, the later figures include the
        // server's own checkpoint, and the output says so.
        match db.execute_unprepared("CHECKPOINT").await {
            Ok(_) => println!("CHECKPOINT: {:.1} s", started.elapsed().as_secs_f64()),
            Err(error) => println!("CHECKPOINT skipped ({error}): later steps may overlap one"),
        }
    }
    Ok(())
}

async fn search(
    db: &DatabaseConnection,
    coaches: &[Uuid],
) -> Result<(), Box<dyn std::error::Error>> {
    let filter = |f: fn(&mut PersonFilter)| {
        let mut filter = PersonFilter::default();
        f(&mut filter);
        filter
    };
    let coach = coaches.first().copied();
    let cases: Vec<(&str, PersonFilter, u64)> = vec![
        ("everyone, page 1", PersonFilter::default(), 0),
        ("everyone, page 1,000", PersonFilter::default(), 999),
        (
            "name prefix 'ada'",
            filter(|f| f.name = Some("ada".into())),
            0,
        ),
        (
            "name 'ada ngu'",
            filter(|f| f.name = Some("ada ngu".into())),
            0,
        ),
        (
            "school id prefix 'S00012'",
            filter(|f| f.name = Some("S00012".into())),
            0,
        ),
        (
            "email prefix 'zoexu1'",
            filter(|f| f.email = Some("zoexu1".into())),
            0,
        ),
        (
            "contains 'rien'",
            filter(|f| f.contains = Some("rien".into())),
            0,
        ),
        (
            "contains 'garc'",
            filter(|f| f.contains = Some("garc".into())),
            0,
        ),
        (
            "contains 'aria'",
            filter(|f| f.contains = Some("aria".into())),
            0,
        ),
        (
            "status NON_PARTICIPATING",
            filter(|f| f.program_status = Some("NON_PARTICIPATING".into())),
            0,
        ),
        (
            "contains '12345'",
            filter(|f| f.contains = Some("12345".into())),
            0,
        ),
        (
            "status GRADUATED",
            filter(|f| f.program_status = Some("GRADUATED".into())),
            0,
        ),
        (
            "status GRADUATED, page 1,000",
            filter(|f| f.program_status = Some("GRADUATED".into())),
            999,
        ),
        (
            "my caseload + ACTIVE",
            PersonFilter {
                coach_id: coach,
                program_status: Some("ACTIVE".into()),
                ..Default::default()
            },
            0,
        ),
        (
            "my caseload, page 500",
            PersonFilter {
                coach_id: coach,
                ..Default::default()
            },
            499,
        ),
        (
            "watched by me",
            PersonFilter {
                watched_by: coach,
                ..Default::default()
            },
            0,
        ),
    ];
    println!("search (page of 50; median and max of 5 runs after one warm-up):");
    for (label, filter, page) in &cases {
        let mut times = Vec::new();
        let mut total = String::new();
        for _ in 0..6 {
            let (time, found) = timed_search(db, filter, *page).await?;
            times.push(time);
            total = format!(
                "{}{}",
                found.total,
                if found.total_is_exact { "" } else { "+" }
            );
        }
        times.remove(0);
        times.sort();
        println!(
            "  {label:<28} total {total:>8}  median {:>6.1} ms  max {:>6.1} ms",
            ms(times[2]),
            ms(times[4])
        );
    }
    // The mix a dashboard sees: every case in turn, 200 queries.
    let mut times = Vec::new();
    for (_, filter, page) in cases.iter().cycle().take(MIXED_QUERIES) {
        times.push(ms(timed_search(db, filter, *page).await?.0));
    }
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "search, {MIXED_QUERIES} mixed queries: p50 {:.1} ms, p95 {:.1} ms",
        pick(0.5),
        pick(0.95)
    );
    let people = count_people_within(db, &PersonFilter::default(), Condition::all()).await?;
    figures(
        db,
        "search",
        people,
        json!({ "queries": MIXED_QUERIES, "p50_ms": pick(0.5), "p95_ms": pick(0.95) }),
    );
    Ok(())
}

/// How many searches the mixed-query figure times.
const MIXED_QUERIES: usize = 200;

/// One search's time and result.
async fn timed_search(
    db: &DatabaseConnection,
    filter: &PersonFilter,
    page: u64,
) -> Result<(Duration, PersonPage), caseload::CaseloadError> {
    let started = Instant::now();
    let found = search_people(
        db,
        filter,
        PageRequest {
            page,
            page_size: 50,
        },
    )
    .await?;
    Ok((started.elapsed(), found))
}

/// An admin to act as (a new one per run, so runs do not depend on each other).
async fn admin(db: &DatabaseConnection) -> Result<StaffUser, Box<dyn std::error::Error>> {
    new_user(db, "Scale admin", Role::Admin).await
}

/// A new user of its own for one run, called `name`.
async fn new_user(
    db: &DatabaseConnection,
    name: &str,
    role: Role,
) -> Result<StaffUser, Box<dyn std::error::Error>> {
    Ok(create_user(
        db,
        NewStaffUser {
            username: format!("scale-{}", Uuid::now_v7().simple()),
            display_name: name.into(),
            role,
            password: "scale-password-long".into(),
        },
    )
    .await?)
}

/// Runs one bulk action over the people `target` selects exactly as the product does:
/// submitted (validated and enqueued), then claimed and executed by a queue runtime with the
/// real executors, batch by batch with checkpoints. Prints the time from submission to
/// COMPLETED and the report.
async fn run_action(
    db: &DatabaseConnection,
    name: &str,
    target: PersonFilter,
    request: impl FnOnce(TargetRequest) -> ActionRequest,
) -> Result<f64, Box<dyn std::error::Error>> {
    let scratch = std::env::temp_dir().join(format!("bulkq-scale-{}", Uuid::now_v7()));
    // A relay on loopback, not the outbox: the outbox's time is the filesystem's, which
    // slows many times over once earlier runs have created and deleted as many files.
    let relay = SmtpServer::start_counting().await;
    let store = Store::new(db.clone());
    let mut registry = Registry::new();
    caseload::actions::register(
        &mut registry,
        ActionsConfig {
            exports_dir: scratch.join("exports"),
            export_retention: caseload::actions::export_files::EXPORT_RETENTION_DEFAULT,
            mailer: relay_mailer(&relay)?,
            batch_size: batch_size()?,
            batch_time_while_people_write: caseload::actions::batch_time_default(
                db.get_database_backend(),
            ),
            email_log_retention: caseload::email::log_retention::EMAIL_LOG_RETENTION_DEFAULT,
            audit_retention: caseload::audit::AUDIT_RETENTION_DEFAULT,
            alerts: Default::default(),
        },
    )?;
    let runtime = Runtime::start(RuntimeConfig::default(), store.clone(), registry).await?;
    let user = admin(db).await?;
    let target = TargetRequest {
        query: Some(target),
        ..TargetRequest::default()
    };
    let started = Instant::now();
    let limits = NodeLimits {
        export_row_cap: DEFAULT_ROW_CAP,
    };
    let task = submit(&store, &user, request(target), &limits, None)
        .await
        .map_err(|e| e.to_string())?;
    let finished = ended(&store, task.id).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let report = task_report(&finished).unwrap_or_default();
    println!(
        "{name}: {} in {elapsed:.1} s; {} people visited, {} changed, {} unchanged",
        finished.workflow_status, finished.progress_done, report.changed, report.unchanged
    );
    if relay.accepted() > 0 {
        println!(
            "{name}: {} messages accepted by the relay",
            relay.accepted()
        );
    }
    let file = export_file(&scratch.join("exports"), task.id);
    let bytes = std::fs::metadata(&file).map_or(0, |meta| meta.len());
    if bytes > 0 {
        println!("{name}: file of {:.1} MB", bytes as f64 / 1e6);
    }
    figures(
        db,
        name,
        finished.progress_done as u64,
        json!({
            "seconds": elapsed,
            "status": finished.workflow_status.as_str(),
            "changed": report.changed,
            "file_bytes": bytes,
        }),
    );
    runtime.shutdown(Duration::from_secs(5)).await;
    std::fs::remove_dir_all(&scratch)?;
    Ok(elapsed)
}

/// The task once it has ended, seen within 20 ms: steps of under a second are timed too.
async fn ended(store: &Store, id: Uuid) -> Result<Task, Box<dyn std::error::Error>> {
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let row = store.task_get(id).await?.ok_or("task vanished")?;
        if row.workflow_status.is_terminal() {
            return Ok(row);
        }
    }
}

/// Times a Watch of everyone of one first name by new users on the watch table as it is,
/// then again once colleagues keep a watch of everyone (at least a million rows more), and
/// prints the second median over the first.
async fn watch(db: &DatabaseConnection, people: u64) -> Result<(), Box<dyn std::error::Error>> {
    let named = PersonFilter {
        name: Some(WATCH_NAME.into()),
        ..PersonFilter::default()
    };
    let request = |target| {
        ActionRequest::Watch(WatchRequest {
            target,
            ..WatchRequest::default()
        })
    };
    let kept_before = watches_kept(db).await?;
    let first = median_of_runs(db, "watch", &named, request).await?;
    watch_floor(db, "watch", first).await?;
    let started = Instant::now();
    for n in 0..KEPT_WATCHES.div_ceil(people.max(1)) {
        let colleague = new_user(db, &format!("Colleague {n}"), Role::Staff).await?;
        watch_everyone(db, colleague.id).await;
    }
    let kept = watches_kept(db).await?;
    println!(
        "watch: {kept} watches kept (from {kept_before}) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    analyze(db).await?;
    let second = median_of_runs(db, "watch, watches kept", &named, request).await?;
    watch_floor(db, "watch, watches kept", second).await?;
    let ratio = second / first;
    println!(
        "watch: {second:.1} s with {kept} watches kept ÷ {first:.1} s with {kept_before}: {ratio:.2}"
    );
    figures(
        db,
        "watch kept",
        people,
        json!({
            "seconds": second,
            "kept": kept,
            "seconds_before": first,
            "kept_before": kept_before,
            "kept_over_before": ratio,
        }),
    );
    Ok(())
}

/// The median time of [`WATCH_RUNS`] runs of `request` on `target`, each by a new user: one
/// Watch takes under a second, where single runs vary by half.
async fn median_of_runs(
    db: &DatabaseConnection,
    name: &str,
    target: &PersonFilter,
    request: impl Fn(TargetRequest) -> ActionRequest,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    for _ in 0..WATCH_RUNS {
        times.push(run_action(db, name, target.clone(), &request).await?);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Prints the median of [`WATCH_RUNS`] runs of the Watch's plain-SQL floor, each by a new
/// user, beside the engine's median `engine`.
async fn watch_floor(
    db: &DatabaseConnection,
    name: &str,
    engine: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut runs = Vec::new();
    for _ in 0..WATCH_RUNS {
        let watcher = new_user(db, "Floor watcher", Role::Staff).await?;
        runs.push(floor::watch(db, WATCH_NAME, watcher.id, batch_size()?).await?);
    }
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let median = runs.swap_remove(runs.len() / 2);
    print_floor(db, name, &median, engine);
    Ok(())
}

/// Runs of each Watch timed.
const WATCH_RUNS: usize = 5;

/// The name a Watch finds people by: one first name, a few in a hundred people, spread over
/// the whole caseload.
const WATCH_NAME: &str = "Ada";

/// The watches the table should keep before a Watch is timed a second time.
const KEPT_WATCHES: u64 = 1_000_000;

async fn watches_kept(db: &DatabaseConnection) -> Result<u64, Box<dyn std::error::Error>> {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) FROM person_watch",
        ))
        .await?
        .ok_or("no count")?;
    Ok(u64::try_from(row.try_get_by_index::<i64>(0)?)?)
}

/// Imports a generated file of `people` new people (school ids `M00000000`…, every fourth
/// with a coach), then the same file again, each as the product imports one: stored in
/// chunks, previewed, then applied by the queue task in checkpointed batches. The first
/// creates everyone; the second changes nobody.
async fn import(db: &DatabaseConnection, people: u64) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::new(db.clone());
    let user = admin(db).await?;
    let mut registry = Registry::new();
    caseload::actions::executors_for_import(&mut registry, batch_size()?);
    let runtime = Runtime::start(RuntimeConfig::default(), store.clone(), registry).await?;
    for step in ["import", "import again"] {
        let started = Instant::now();
        let upload = upload_people_file(&store, user.id, people).await?;
        let uploaded = started.elapsed().as_secs_f64();
        let seen = preview(db, &upload, None, false).await?;
        let previewed = started.elapsed().as_secs_f64() - uploaded;
        let applying = Instant::now();
        let spec = ImportSpec::of(&upload, &seen, false);
        let by = caseload::audit::Actor::staff(user.id, &user.username, "");
        let task = start_import(&store, &by, &spec).await?;
        let finished = ended(&store, task.id).await?;
        let applied = applying.elapsed().as_secs_f64();
        let seconds = started.elapsed().as_secs_f64();
        let progress = ImportProgress::of(&finished.execution_state);
        let counts = progress.counts;
        println!(
            "{step}: {} in {seconds:.1} s (upload {uploaded:.1} s, preview {previewed:.1} s, \
             import {applied:.1} s); {} rows, {} created, {} changed, {} unchanged, {} problems",
            finished.workflow_status,
            progress.rows,
            counts.created,
            counts.changed,
            counts.unchanged,
            progress.problems
        );
        figures(
            db,
            step,
            progress.rows,
            json!({
                "seconds": seconds,
                "upload_seconds": uploaded,
                "preview_seconds": previewed,
                "import_seconds": applied,
                "status": finished.workflow_status.as_str(),
                "created": counts.created,
                "unchanged": counts.unchanged,
                "file_bytes": upload.size(),
            }),
        );
    }
    runtime.shutdown(Duration::from_secs(5)).await;
    Ok(())
}

/// Stores the generated file, a megabyte at a time as it is written.
async fn upload_people_file(
    store: &Store,
    user_id: Uuid,
    people: u64,
) -> Result<Upload, Box<dyn std::error::Error>> {
    const PART: usize = 1 << 20;
    let mut writer = UploadWriter::begin(store, user_id, "scale.csv", u64::MAX).await?;
    let mut part = String::from("school_id,first_name,last_name,email,program_status,coach\n");
    for n in 0..people {
        let coach = match n % 4 {
            0 => format!("coach{}", (n / 4) % 20),
            _ => String::new(),
        };
        writeln!(
            part,
            "M{n:08},First{n},Last{n},m{n}@example.edu,ACTIVE,{coach}"
        )?;
        if part.len() >= PART {
            writer.write(store, part.as_bytes()).await?;
            part.clear();
        }
    }
    writer.write(store, part.as_bytes()).await?;
    Ok(writer.finish(store).await?)
}

/// Opens the database as a node does (its pool, its durability settings).
async fn connect(url: &str) -> Result<DatabaseConnection, sea_orm::DbErr> {
    queue::database::connect(url, queue::database::DEFAULT_MAX_CONNECTIONS).await
}

/// A copy of the database `db` (at `url`) as it is now, for a floor, and `db` opened again
/// (the copy closes it).
async fn copy_for_floor(
    url: &str,
    db: DatabaseConnection,
) -> Result<(floor::DatabaseCopy, DatabaseConnection), Box<dyn std::error::Error>> {
    let copy = floor::DatabaseCopy::of(url, db).await?;
    Ok((copy, connect(url).await?))
}

/// Times `change`'s plain-SQL floor on `copy`, then deletes it. It runs after the engine,
/// so the engine's step reports its own peak RSS.
async fn column_change_floor<T>(
    copy: floor::DatabaseCopy,
    change: &floor::ColumnChange<T>,
) -> Result<floor::Floor, Box<dyn std::error::Error>>
where
    T: sea_orm::TryGetable + Into<sea_orm::Value> + Clone + PartialEq,
{
    let (copy_db, actor) = open_copy(&copy).await?;
    let floor = floor::column_change(&copy_db, change, actor, batch_size()?).await?;
    close_copy(copy, copy_db).await?;
    Ok(floor)
}

/// `copy` opened for its floor, and the admin the floor acts as.
async fn open_copy(
    copy: &floor::DatabaseCopy,
) -> Result<(DatabaseConnection, Uuid), Box<dyn std::error::Error>> {
    let copy_db = floor::connect(&copy.url).await?;
    floor::layout_before_name_ranges(&copy_db).await?;
    let actor = admin(&copy_db).await?.id;
    Ok((copy_db, actor))
}

/// Closes `copy_db` and deletes `copy`.
async fn close_copy(
    copy: floor::DatabaseCopy,
    copy_db: DatabaseConnection,
) -> Result<(), Box<dyn std::error::Error>> {
    copy_db.close().await?;
    copy.drop().await
}

/// Prints an action's plain-SQL floor beside the engine's time, and the ratio of the two.
fn print_floor(db: &DatabaseConnection, name: &str, floor: &floor::Floor, engine_seconds: f64) {
    let ratio = engine_seconds / floor.seconds;
    println!(
        "{name}: engine {engine_seconds:.1} s, plain-SQL floor {:.1} s ({} people), engine ÷ floor {ratio:.2}",
        floor.seconds, floor.changed
    );
    figures(
        db,
        &format!("{name} floor"),
        floor.changed,
        json!({
            "seconds": floor.seconds,
            "changed": floor.changed,
            "engine_seconds": engine_seconds,
            "engine_over_floor": ratio,
        }),
    );
}

/// A mailer that sends to `relay`, as the engine's does.
fn relay_mailer(relay: &SmtpServer) -> Result<Mailer, caseload::CaseloadError> {
    Mailer::new(
        "scale <scale@localhost>",
        &MailTransport::Smtp(SmtpRelay::plain(
            "127.0.0.1",
            relay.port,
            Duration::from_secs(10),
        )),
    )
}

/// Everyone, as a saved query.
fn everyone() -> PersonFilter {
    PersonFilter::default()
}

/// Prints one step's figures as a JSON line, with this process's peak RSS so far.
fn figures(db: &DatabaseConnection, step: &str, people: u64, figures: serde_json::Value) {
    let line = json!({
        "scenario": "bulk",
        "step": step,
        "backend": format!("{:?}", db.get_database_backend()).to_lowercase(),
        "cores": std::thread::available_parallelism().map_or(1, usize::from),
        "params": { "people": people },
        "figures": figures,
        "peak_rss_mib": peak_rss_mib().round(),
    });
    println!("{line}");
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// People per batch: the product's default, or `SCALE_BATCH_SIZE` to measure another.
fn batch_size() -> Result<u64, Box<dyn std::error::Error>> {
    match std::env::var("SCALE_BATCH_SIZE") {
        Ok(size) => Ok(size.parse()?),
        Err(_) => Ok(BATCH_SIZE_DEFAULT),
    }
}
