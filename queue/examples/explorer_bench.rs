//! The task explorer's benchmark: `make bench` (or `cargo run --release -p queue --features
//! testing --example explorer_bench -- [--backend sqlite|postgres] [--tasks N] [--runs N]`).
//!
//! A database of its own per backend holds N (1,000,000) retained tasks, as a queue that
//! has kept three months of history has them: created over 90 days by 200 owners across the
//! five bulk actions; nearly all COMPLETED, about 1 % FAILURE, 0.5 % ABANDONED, 0.1 % ERROR,
//! 300 QUEUED for later and 80 EXECUTING. Then each of the explorer's typical views is asked
//! for `runs` (40) times in turn, after a warm-up round, exactly as the explorer asks
//! ([`Store::task_page`]: a page of 50, the count of matches up to 10,000, and the next
//! page's mark), and the time of each answer is recorded.
//!
//! Prints a table (p50 / p95 / max per view) and one JSON line per backend with the p50,
//! p95 and max over every answer. The goal is p95 ≤ 50 ms on both backends.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use queue::schema::QueueMigrator;
use queue::testing::{Backend, TestDatabase};
use queue::{ManualClock, NewTask, Page, Store, TaskCursor, TaskFilter, TaskStatus};
use sea_orm::ConnectionTrait;
use serde_json::json;
use uuid::Uuid;

type Error = Box<dyn std::error::Error>;

const OWNERS: usize = 200;
const DAYS: i64 = 90;
/// Tasks per enqueue transaction while seeding.
const SEED_CHUNK: usize = 2_000;
const PAGE_SIZE: u64 = 50;
/// As the explorer counts: up to 10,000 matches.
const COUNT_CAP: u64 = 10_000;
const QUEUED_LEFT: usize = 300;
const EXECUTING_LEFT: usize = 80;
/// The actions and how often each is asked for, out of 20.
const ACTIONS: [(&str, usize); 5] = [
    ("caseload.watch", 7),
    ("caseload.export", 5),
    ("caseload.program_status_change", 4),
    ("caseload.email", 3),
    ("caseload.unwatch", 1),
];

/// What becomes of a seeded task; carried in its `priority` until the seed's last UPDATE.
#[derive(Clone, Copy)]
enum Fate {
    Completed = 0,
    Failure = 1,
    Error = 2,
    Abandoned = 3,
    Queued = 4,
    Executing = 5,
}

struct Settings {
    backends: Vec<Backend>,
    tasks: usize,
    runs: usize,
}

/// What the seed leaves for the views to ask about.
struct Seeded {
    owners: Vec<Uuid>,
    /// A task somewhere in the middle of the table.
    middle: Uuid,
    start: DateTime<Utc>,
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let settings = settings(&std::env::args().skip(1).collect::<Vec<_>>())?;
    for &backend in &settings.backends {
        let name = format!("{backend:?}").to_lowercase();
        let Some(db) = TestDatabase::create::<QueueMigrator>(backend).await else {
            println!("explorer {name}: skipped, no server answers");
            continue;
        };
        let clock = Arc::new(ManualClock::new(Utc::now() - chrono::Duration::days(DAYS)));
        let store = Store::with_clock(db.conn.clone(), clock.clone());
        let started = Instant::now();
        let seeded = seed(&store, &clock, settings.tasks).await?;
        let seed_seconds = started.elapsed().as_secs_f64();
        let mut views = views(&seeded);
        // The running tasks' second page, after the first page's mark.
        let running = TaskFilter {
            statuses: TaskStatus::RUNNING.to_vec(),
            ..TaskFilter::default()
        };
        let first = store
            .task_page(&running, Page::first(PAGE_SIZE), COUNT_CAP)
            .await?;
        let second = Page {
            before: first.next,
            limit: PAGE_SIZE,
        };
        views.push(("running, second page".to_owned(), running, second));
        let mut all = Vec::new();
        println!(
            "\nexplorer on {name}: {} tasks seeded in {seed_seconds:.0} s",
            settings.tasks
        );
        println!(
            "{:<44} {:>8} {:>8} {:>8} {:>8}",
            "view", "matches", "p50 ms", "p95 ms", "max ms"
        );
        for (label, filter, page) in &views {
            store.task_page(filter, *page, COUNT_CAP).await?;
            let mut times = Vec::with_capacity(settings.runs);
            let mut matches = String::new();
            for _ in 0..settings.runs {
                let asked = Instant::now();
                let found = store.task_page(filter, *page, COUNT_CAP).await?;
                times.push(asked.elapsed().as_secs_f64() * 1000.0);
                matches = format!("{}{}", found.total, if found.more { "+" } else { "" });
            }
            times.sort_by(f64::total_cmp);
            println!(
                "{label:<44} {matches:>8} {:>8.1} {:>8.1} {:>8.1}",
                quantile(&times, 0.5),
                quantile(&times, 0.95),
                quantile(&times, 1.0)
            );
            all.extend(times);
        }
        all.sort_by(f64::total_cmp);
        let line = json!({
            "scenario": "explorer",
            "backend": name,
            "params": {"tasks": settings.tasks, "views": views.len(), "runs": settings.runs, "page": PAGE_SIZE},
            "figures": {
                "p50_ms": round(quantile(&all, 0.5)),
                "p95_ms": round(quantile(&all, 0.95)),
                "max_ms": round(quantile(&all, 1.0)),
                "seed_s": round(seed_seconds),
            },
        });
        println!("{line}");
        println!(
            "explorer on {name}: p95 {:.1} ms over {} answers (goal ≤ 50 ms)",
            quantile(&all, 0.95),
            all.len()
        );
    }
    Ok(())
}

/// The views people open: (label, filter, page).
fn views(seeded: &Seeded) -> Vec<(String, TaskFilter, Page)> {
    let owner = seeded.owners[17];
    let day = seeded.start + chrono::Duration::days(DAYS / 3);
    let week = seeded.start + chrono::Duration::days(DAYS - 10);
    let filter = |f: fn(&mut TaskFilter)| {
        let mut filter = TaskFilter::default();
        f(&mut filter);
        filter
    };
    let first = Page::first(PAGE_SIZE);
    let mut views = vec![
        (
            "everything, newest".to_owned(),
            TaskFilter::default(),
            first,
        ),
        (
            "ended badly".to_owned(),
            filter(|f| f.statuses = TaskStatus::PROBLEMS.to_vec()),
            first,
        ),
        (
            "failures".to_owned(),
            filter(|f| f.statuses = vec![TaskStatus::Failure]),
            first,
        ),
        (
            "completed exports".to_owned(),
            filter(|f| {
                f.statuses = vec![TaskStatus::Completed];
                f.component = Some("caseload.export".into());
            }),
            first,
        ),
        (
            "unwatches (the rarest action)".to_owned(),
            filter(|f| f.component = Some("caseload.unwatch".into())),
            first,
        ),
        (
            "queued".to_owned(),
            filter(|f| f.statuses = vec![TaskStatus::Queued]),
            first,
        ),
        (
            "running".to_owned(),
            filter(|f| f.statuses = TaskStatus::RUNNING.to_vec()),
            first,
        ),
        (
            "unfinished".to_owned(),
            filter(|f| f.statuses = TaskStatus::ACTIVE.to_vec()),
            first,
        ),
        (
            "by id".to_owned(),
            TaskFilter {
                id: Some(seeded.middle),
                ..TaskFilter::default()
            },
            first,
        ),
        ("one owner's".to_owned(), owned(owner, None), first),
        (
            "one owner's failures".to_owned(),
            owned(owner, Some(TaskStatus::Failure)),
            first,
        ),
        (
            "one day".to_owned(),
            TaskFilter {
                created_from: Some(day),
                created_until: Some(day + chrono::Duration::days(1)),
                ..TaskFilter::default()
            },
            first,
        ),
        (
            "emails of one week".to_owned(),
            TaskFilter {
                component: Some("caseload.email".into()),
                created_from: Some(week),
                created_until: Some(week + chrono::Duration::days(7)),
                ..TaskFilter::default()
            },
            first,
        ),
    ];
    // A page deep into the list: after a mark two thirds of the way back.
    views.push((
        "everything, a page 60 days back".to_owned(),
        TaskFilter::default(),
        Page {
            before: Some(TaskCursor {
                created: seeded.start + chrono::Duration::days(DAYS / 3),
                id: Uuid::max(),
            }),
            limit: PAGE_SIZE,
        },
    ));
    views
}

fn owned(owner: Uuid, status: Option<TaskStatus>) -> TaskFilter {
    TaskFilter {
        owner_id: Some(owner),
        statuses: status.into_iter().collect(),
        ..TaskFilter::default()
    }
}

/// Enqueues `count` tasks over [`DAYS`] days, then gives each its fate in one UPDATE.
async fn seed(store: &Store, clock: &ManualClock, count: usize) -> Result<Seeded, Error> {
    let start = store.clock().now();
    let owners: Vec<Uuid> = (0..OWNERS).map(|_| Uuid::now_v7()).collect();
    let chunks = count.div_ceil(SEED_CHUNK);
    let step = chrono::Duration::days(DAYS) / i32::try_from(chunks.max(1))?;
    let actions: Vec<&str> = ACTIONS
        .iter()
        .flat_map(|(name, weight)| std::iter::repeat_n(*name, *weight))
        .collect();
    let later = start + chrono::Duration::days(DAYS + 30);
    let mut middle = Uuid::nil();
    for chunk in 0..chunks {
        let tasks: Vec<NewTask> = (0..SEED_CHUNK.min(count - chunk * SEED_CHUNK))
            .map(|i| {
                let n = chunk * SEED_CHUNK + i;
                let fate = fate(n, count);
                let task = NewTask::new(
                    actions[n % actions.len()],
                    json!({"target": {"ids": []}}),
                    owners[(n * 7 + chunk) % OWNERS],
                )
                .with_priority(fate as i32);
                match fate {
                    Fate::Queued => task.with_run_at(later),
                    _ => task,
                }
            })
            .collect();
        let mut txn = store.begin_queue().await?;
        let rows = txn.enqueue_many(tasks).await?;
        txn.commit().await?;
        if chunk == chunks / 2 {
            middle = rows.first().map(|task| task.id).unwrap_or_default();
        }
        clock.advance(step);
    }
    let finish = "UPDATE queue_task SET \
         workflow_status = CASE priority WHEN 1 THEN 'FAILURE' WHEN 2 THEN 'ERROR' \
           WHEN 3 THEN 'ABANDONED' WHEN 5 THEN 'EXECUTING' ELSE 'COMPLETED' END, \
         attempt = 1, execution_started_date = created_date, \
         scheduled_by_process = 'explorer-bench-node', \
         workflow_stopped_date = CASE priority WHEN 5 THEN NULL ELSE created_date END, \
         priority = 0 \
         WHERE priority <> 4";
    let db = store.db();
    db.execute_unprepared(finish).await?;
    let (tidy, settle) = match store.backend() {
        sea_orm::DbBackend::Postgres => ("VACUUM ANALYZE", "CHECKPOINT"),
        _ => ("ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"),
    };
    db.execute_unprepared(tidy).await?;
    db.execute_unprepared(settle).await?;
    Ok(Seeded {
        owners,
        middle,
        start,
    })
}

/// The `n`th of `count` tasks' fate: the newest few are still queued or running; of the rest
/// about 1 % failed, 0.5 % were abandoned and 0.1 % met an error.
fn fate(n: usize, count: usize) -> Fate {
    if n + QUEUED_LEFT >= count {
        Fate::Queued
    } else if n + QUEUED_LEFT + EXECUTING_LEFT >= count {
        Fate::Executing
    } else if n % 100 == 37 {
        Fate::Failure
    } else if n % 200 == 11 {
        Fate::Abandoned
    } else if n % 1000 == 503 {
        Fate::Error
    } else {
        Fate::Completed
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn settings(args: &[String]) -> Result<Settings, Error> {
    let mut settings = Settings {
        backends: vec![Backend::Sqlite, Backend::Postgres],
        tasks: 1_000_000,
        runs: 40,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--backend" => {
                settings.backends = match value.as_str() {
                    "sqlite" => vec![Backend::Sqlite],
                    "postgres" => vec![Backend::Postgres],
                    other => return Err(format!("unknown backend {other}").into()),
                }
            }
            "--tasks" => settings.tasks = value.parse()?,
            "--runs" => settings.runs = value.parse()?,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(settings)
}
