//! Measures the caseload at scale: seeding, search latency, and the bulk actions' domain work
//! over everyone.
//!
//! ```text
//! cargo run --release -p caseload --example scale -- <database-url> <people> [seed|search|status|export]...
//! ```
//! With no step named, runs them all; run one step per process to see its own peak RSS.
//! `search`, `status` and `export` expect the people to exist.

use std::time::{Duration, Instant};

use caseload::access::Actor;
use caseload::actions::spec::ALL_COLUMNS;
use caseload::export::{CsvExport, DEFAULT_ROW_CAP, ExportOptions};
use caseload::search::{PageRequest, PersonFilter, people_after, search_people};
use caseload::seed::{SeedOptions, seed_people};
use caseload::status_change::{StatusChange, change_status};
use caseload::users::{NewStaffUser, Role, create_user, ids_with_role};
use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, TransactionTrait};
use uuid::Uuid;

/// People per batch of the bulk actions, as their executors checkpoint them.
const BATCH: u64 = 1_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, people, steps @ ..] = args.as_slice() else {
        return Err("usage: scale <database-url> <people> [seed|search|status|export]...".into());
    };
    let people: u64 = people.parse()?;
    let all = steps.is_empty();
    let wants = |step: &str| all || steps.iter().any(|s| s == step);
    let db = queue::database::connect(url, queue::database::DEFAULT_MAX_CONNECTIONS).await?;
    Migrator::up(&db, None).await?;
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
        println!(
            "seed: {added} people in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        analyze(&db).await?;
    }
    if wants("search") {
        search(&db, &coaches).await?;
    }
    if wants("status") {
        status_change_everyone(&db).await?;
    }
    if wants("export") {
        export_everyone(&db).await?;
    }
    println!("peak RSS: {} MiB", peak_rss_kib() / 1024);
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
                password: "scale-password".into(),
            },
        )
        .await?;
        ids.push(user.id);
    }
    Ok(ids)
}

/// Refreshes planner statistics, as autovacuum (PostgreSQL) or `PRAGMA optimize` would.
async fn analyze(db: &DatabaseConnection) -> Result<(), sea_orm::DbErr> {
    let started = Instant::now();
    let sql = match db.get_database_backend() {
        DbBackend::Postgres => "VACUUM ANALYZE person",
        _ => "ANALYZE",
    };
    db.execute_unprepared(sql).await?;
    println!("{sql}: {:.1} s", started.elapsed().as_secs_f64());
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
            "my caseload + ACTIVE",
            PersonFilter {
                coach_id: coach,
                program_status: Some("ACTIVE".into()),
                ..Default::default()
            },
            0,
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
    for (label, filter, page) in cases {
        let mut times = Vec::new();
        let mut total = String::new();
        for _ in 0..6 {
            let started = Instant::now();
            let found = search_people(
                db,
                &filter,
                PageRequest {
                    page,
                    page_size: 50,
                },
            )
            .await?;
            times.push(started.elapsed());
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
    Ok(())
}

/// An admin to act as (a new one per run, so runs do not depend on each other).
async fn admin(db: &DatabaseConnection) -> Result<Actor, Box<dyn std::error::Error>> {
    let admin = create_user(
        db,
        NewStaffUser {
            username: format!("scale-admin-{}", Uuid::now_v7().simple()),
            display_name: "Scale admin".into(),
            role: Role::Admin,
            password: "scale-password".into(),
        },
    )
    .await?;
    Ok(Actor {
        id: admin.id,
        role: Role::Admin,
    })
}

/// Moves everyone to another status in checkpoint-sized batches, each in its own transaction,
/// walking the whole caseload by keyset as an executor with a `{"query": {}}` target would.
async fn status_change_everyone(db: &DatabaseConnection) -> Result<(), Box<dyn std::error::Error>> {
    let actor = admin(db).await?;
    let change = StatusChange {
        to_status: "INACTIVE".into(),
        reason: "scale measurement".into(),
    };
    let task_id = Uuid::now_v7();
    let started = Instant::now();
    let (mut after, mut changed, mut seen) = (None, 0, 0);
    loop {
        let batch = people_after(db, &PersonFilter::default(), &actor, after, BATCH).await?;
        let Some(last) = batch.last() else { break };
        after = Some(last.id);
        let ids: Vec<Uuid> = batch.iter().map(|p| p.id).collect();
        let txn = db.begin().await?;
        changed += change_status(&txn, task_id, &actor, &change, &ids, chrono::Utc::now())
            .await?
            .changed;
        txn.commit().await?;
        seen += ids.len();
    }
    println!(
        "status change: {seen} people visited, {changed} changed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Exports everyone, all columns, in batches with a checkpoint (flush + fsync) after each.
async fn export_everyone(db: &DatabaseConnection) -> Result<(), Box<dyn std::error::Error>> {
    let actor = admin(db).await?;
    let path = std::env::temp_dir().join(format!("bulkq-scale-export-{}.csv", Uuid::now_v7()));
    let options = ExportOptions {
        columns: ALL_COLUMNS.to_vec(),
        row_cap: DEFAULT_ROW_CAP,
    };
    let started = Instant::now();
    let mut export = CsvExport::open(&path, options, None)?;
    let mut after = None;
    while !export.is_full() {
        let batch = people_after(db, &PersonFilter::default(), &actor, after, BATCH).await?;
        let Some(last) = batch.last() else { break };
        after = Some(last.id);
        export.write_people(&batch)?;
        export.checkpoint()?;
    }
    let progress = export.checkpoint()?;
    println!(
        "export: {} rows, {:.1} MB in {:.1} s ({})",
        progress.rows,
        progress.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        path.display()
    );
    std::fs::remove_file(&path)?;
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The process's peak resident set size (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
