//! "People under load": an office of staff using the dashboard while the queue works off
//! their bulk actions, on a node started as `bulkq serve` starts it (its router driven
//! in-process, each client with its own address, without sockets).
//!
//! ```text
//! cargo run --release -p server --example people_under_load -- <database-url> [people] [seconds]
//! ```
//! 0. The watches an office keeps already: [`EARLIER_WATCHERS`] colleagues each watching
//!    the whole caseload, so that both phases below add to a table of about the size the
//!    office's own work makes of it (a Watch costs more on a larger table).
//! 1. Alone: a backlog of Watch tasks, each a saved query of about 2,500 people, worked off
//!    once nobody has used the dashboard for `PEOPLE_WRITING_WINDOW` (30 s): the background
//!    rate on its own, in people/s.
//! 2. Under load: a fresh backlog sized to outlast the phase, and eight clients for
//!    `seconds` (default 60), each sending a request 250 ms after its last answer: 40 % "My tasks" lists,
//!    30 % caseload search pages, 30 % Watch submissions by saved query. The background
//!    rate meanwhile, against the rate alone.
//! 3. Sign-ins, one every 250 ms, while the backlog drains (the clients' own at the start are
//!    not timed).
//!
//! Prints a table and one JSON line (scenario "people_under_load"); `make bench` runs it on
//! both backends with 100,000 people (default).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{self as http, Request, header};
use bulkq_types::actions::ActionKind;
use caseload::seed::{SeedOptions, seed_people};
use caseload::testing::watch_everyone;
use caseload::users::{NewStaffUser, Role, create_user};
use clap::Parser;
use http_body_util::BodyExt;
use queue::testing::{peak_rss_mib, reset_peak_rss};
use queue::{Store, TaskStatus, WriteClass};
use sea_orm::{ActiveEnum, ConnectionTrait, DatabaseConnection, Iterable, Statement};
use serde_json::json;
use server::commands::start_node;
use server::config::ServeOptions;
use server::database_target::DatabaseTarget;
use tower::ServiceExt;

/// The office: clients sending requests at once.
const CLIENTS: usize = 8;
/// Watch tasks in the backlog worked off alone.
const ALONE_TASKS: usize = 48;
/// Colleagues whose watches of everyone the caseload holds before the phases begin.
///
/// On SQLite a watched person's entry in the index by person lands on a page of its own
/// once the index outgrows the writer's cache, so the rate of Watch work falls as the table
/// grows: from an empty table the phase alone (about 125,000 watches) ran at several times
/// the rate of the phase under load (a million or more), and the share measured the
/// table's growth, not the office. Ten watchers of 100,000 people is about what that phase
/// adds.
const EARLIER_WATCHERS: usize = 10;
/// How long a client waits between an answer and its next request (reading, clicking).
const THINK_TIME: Duration = Duration::from_millis(250);
/// Sign-ins measured while the backlog drains.
const SIGN_INS: usize = 20;
const PASSWORD: &str = "people-under-load";
/// First names of the seeded caseload that start no other: each is a saved query of about
/// one person in 38 (2,600 of 100,000).
const NAMES: &[&str] = &[
    "Ada", "Ben", "Carla", "Dana", "Elena", "Farah", "Grace", "Hana", "Ivan", "Jamal", "Lara",
    "Maya", "Nadia", "Olga", "Priya", "Quinn", "Rosa", "Sofia", "Uma", "Victor", "Yusuf", "Zoe",
];

/// The kinds of request, in the order the table shows them.
const KINDS: [&str; 4] = ["sign-in", "task list", "caseload page", "submit"];

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, people, seconds) = match args.as_slice() {
        [url] => (url.clone(), 100_000, 60),
        [url, people] => (url.clone(), people.parse()?, 60),
        [url, people, seconds] => (url.clone(), people.parse()?, seconds.parse()?),
        _ => anyhow::bail!("usage: people_under_load <database-url> [people] [seconds]"),
    };
    let scratch = tempfile::tempdir()?;
    let db = DatabaseTarget::at(url.as_str()).open(4).await?;
    let backend = format!("{:?}", db.get_database_backend()).to_lowercase();
    let present = scalar(&db, "SELECT COUNT(*) FROM person").await?;
    let wanted = u64::try_from(people)?;
    if present < people {
        let options = SeedOptions {
            people: wanted - u64::try_from(present)?,
            seed: 42,
            coaches: Vec::new(),
        };
        seed_people(&db, &options).await?;
    }
    keep_earlier_watches(&url, EARLIER_WATCHERS).await?;
    // The node's memory, not the seeding's.
    reset_peak_rss();
    let exports = scratch.path().join("exports");
    let outbox = scratch.path().join("outbox");
    let options = ServeOptions::parse_from([
        "serve".as_ref(),
        "--exports-dir".as_ref(),
        exports.as_os_str(),
        "--outbox-dir".as_ref(),
        outbox.as_os_str(),
    ]);
    let node = start_node(&DatabaseTarget::at(url.as_str()), &options).await?;
    // The office's own pool, as the dashboard has its own.
    let store = node.runtime.store().on_pool(db.clone());
    let office = Office {
        router: node.router.clone(),
        db,
        store,
    };

    // 1. The backlog alone.
    let owners = office
        .users("alone", ALONE_TASKS.div_ceil(NAMES.len()))
        .await?;
    office.submit_backlog(&owners, ALONE_TASKS).await?;
    office.wait_until_nobody_writes().await;
    let before = office.people_watched_by_tasks().await?;
    let started = Instant::now();
    office.resume_watches().await?;
    office.wait_for_empty_queue().await?;
    let alone_rate =
        (office.people_watched_by_tasks().await? - before) as f64 / started.elapsed().as_secs_f64();

    // 2. The office at work over a fresh backlog that outlasts it.
    let per_task = wanted as f64 / 38.0;
    let backlog = ((alone_rate * seconds as f64 * 2.0 / per_task).ceil() as usize).max(CLIENTS);
    let owners = office
        .users("backlog", backlog.div_ceil(NAMES.len()))
        .await?;
    let clients = office.users("client", CLIENTS).await?;
    let late = office.users("late", SIGN_INS).await?;
    office.submit_backlog(&owners, backlog).await?;
    let before = office.people_watched_by_tasks().await?;
    let completed_before = office.watch_tasks([TaskStatus::Completed]).await?;
    let started = Instant::now();
    office.resume_watches().await?;
    let deadline = started + Duration::from_secs(seconds);
    let work: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(n, name)| office.client(n, name, deadline))
        .collect();
    let mut timings = Timings::default();
    for client in futures_util::future::join_all(work).await {
        timings.merge(client?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let loaded_rate = (office.people_watched_by_tasks().await? - before) as f64 / elapsed;
    let tasks_rate =
        (office.watch_tasks([TaskStatus::Completed]).await? - completed_before) as f64 / elapsed;
    let waiting_after = office.watch_tasks(unfinished()).await?;

    // 3. Sign-ins while the backlog drains.
    for (n, name) in late.iter().enumerate() {
        let took = office.sign_in(CLIENTS + n, name).await?;
        timings.record(0, took.0, took.1);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    node.shutdown(Duration::from_secs(10))
        .await
        .context("the queue did not stop in 10 s")?;

    let ratio = loaded_rate / alone_rate;
    let rss = peak_rss_mib();
    println!("people under load ({backend}, {people} people, {CLIENTS} clients for {seconds} s)");
    println!("| request | count | errors | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|");
    let mut kinds = serde_json::Map::new();
    for (kind, name) in KINDS.iter().enumerate() {
        let summary = timings.summary(kind);
        println!(
            "| {name} | {} | {} | {:.1} | {:.1} | {:.1} |",
            summary.count, summary.errors, summary.p50, summary.p99, summary.max
        );
        kinds.insert((*name).to_owned(), summary.to_json());
    }
    println!(
        "background: {alone_rate:.0} people/s alone, {loaded_rate:.0} under load ({:.0} %), \
         {tasks_rate:.2} tasks/s; {waiting_after} tasks still waiting; peak RSS {rss:.0} MiB",
        ratio * 100.0
    );
    if waiting_after == 0 {
        println!("the backlog ran out before the load ended: the rate under load is a lower bound");
    }
    let line = json!({
        "scenario": "people_under_load",
        "backend": backend,
        "cores": std::thread::available_parallelism().map_or(1, usize::from),
        "params": {
            "people": people,
            "seconds": seconds,
            "clients": CLIENTS,
            "queue_nice": options.queue_nice,
            "batches_while_people_write": options.batches_while_people_write,
        },
        "figures": {
            "requests": kinds,
            "requests_per_s": timings.total() as f64 / elapsed,
            "background_people_per_s_alone": alone_rate.round(),
            "background_people_per_s_under_load": loaded_rate.round(),
            "background_ratio": (ratio * 1000.0).round() / 1000.0,
            "background_tasks_per_s": (tasks_rate * 100.0).round() / 100.0,
            "backlog_waiting_after": waiting_after,
        },
        "peak_rss_mib": rss.round(),
    });
    println!("{line}");
    Ok(())
}

/// The node and its database, as the office sees them.
struct Office {
    router: Router,
    db: DatabaseConnection,
    store: Store,
}

impl Office {
    /// Creates `count` staff users named `<prefix>-<n>`.
    async fn users(&self, prefix: &str, count: usize) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::with_capacity(count);
        for n in 1..=count {
            let username = format!("{prefix}-{n}");
            let user = NewStaffUser {
                username: username.clone(),
                display_name: username.clone(),
                role: Role::Staff,
                password: PASSWORD.to_owned(),
            };
            create_user(&self.db, user).await?;
            names.push(username);
        }
        Ok(names)
    }

    /// Submits `tasks` Watch tasks, each by one of `owners` on a saved query no task of that
    /// owner had, so each watches its people anew; they wait, paused, until
    /// [`Office::resume_watches`], so that none is done before the clock starts.
    async fn submit_backlog(&self, owners: &[String], tasks: usize) -> anyhow::Result<()> {
        self.store
            .component_pause(ActionKind::Watch.component(), "people_under_load")
            .await?;
        for (n, owner) in owners.iter().enumerate() {
            let cookie = self.sign_in(n, owner).await?.2;
            let first = n * NAMES.len();
            for name in NAMES.iter().take(tasks.saturating_sub(first)) {
                let (ok, _) = self.send(n, watch(name, &cookie)?).await?;
                anyhow::ensure!(ok, "a backlog submission was refused");
            }
        }
        Ok(())
    }

    /// One client until `deadline`: signed in, then requests in the mix, one at a time.
    async fn client(&self, n: usize, user: &str, deadline: Instant) -> anyhow::Result<Timings> {
        let mut timings = Timings::default();
        // Not timed: all eight at once is no office's pattern; sign-ins are timed later.
        let (_, ok, cookie) = self.sign_in(n, user).await?;
        anyhow::ensure!(ok, "a client could not sign in");
        let mut i = 0;
        while Instant::now() < deadline {
            let name = NAMES[(n * 7 + i) % NAMES.len()];
            // Ten requests: four lists, three pages, three submissions, the order varied.
            let (kind, request) = match (n + i) % 10 {
                0..=3 => (1, get("/api/1/tasks?mine", &cookie)?),
                4..=6 => (2, caseload_page(name, i % 5, &cookie)?),
                _ => (3, watch(name, &cookie)?),
            };
            let started = Instant::now();
            let (ok, _) = self.send(n, request).await?;
            timings.record(kind, started.elapsed(), ok);
            i += 1;
            tokio::time::sleep(THINK_TIME).await;
        }
        Ok(timings)
    }

    /// Signs `user` in from client `n`: how long it took, whether it worked, the cookie.
    async fn sign_in(&self, n: usize, user: &str) -> anyhow::Result<(Duration, bool, String)> {
        let request = Request::post("/api/sign_in")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(format!("username={user}&password={PASSWORD}")))?;
        let started = Instant::now();
        let (ok, cookie) = self.send(n, request).await?;
        Ok((started.elapsed(), ok, cookie.unwrap_or_default()))
    }

    /// Sends a request from client `n` and reads the whole answer: whether it succeeded,
    /// and the session cookie it set, if any.
    async fn send(
        &self,
        n: usize,
        mut request: Request<Body>,
    ) -> anyhow::Result<(bool, Option<String>)> {
        let address = SocketAddr::from(([127, 0, 1, u8::try_from(n % 250)? + 1], 40_000));
        request.extensions_mut().insert(ConnectInfo(address));
        let response = self.router.clone().oneshot(request).await?;
        let ok = response.status().is_success() || response.status().is_redirection();
        let cookie = response
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok()?.split(';').next())
            .find(|pair| pair.starts_with(server::web::SESSION_COOKIE))
            .map(str::to_owned);
        response.into_body().collect().await?;
        Ok((ok, cookie))
    }

    /// Waits until the node no longer counts people as writing: the backlog's sign-ins and
    /// submissions were people's writes, and for [`queue::store::PEOPLE_WRITING_WINDOW`]
    /// after one the bulk work runs in batches sized for people waiting (ADR 0033).
    async fn wait_until_nobody_writes(&self) {
        while self.store.people_writing() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Lets the backlog go. Not a person's write: the alone phase's batches take
    /// `--batch-size` people, as they would with nobody about.
    async fn resume_watches(&self) -> anyhow::Result<()> {
        self.store
            .component_resume_as(ActionKind::Watch.component(), WriteClass::Background)
            .await?;
        Ok(())
    }

    /// People visited by all Watch tasks so far, finished or not.
    async fn people_watched_by_tasks(&self) -> anyhow::Result<i64> {
        let sql = format!(
            "SELECT CAST(COALESCE(SUM(progress_done), 0) AS BIGINT) FROM queue_task \
             WHERE execution_component_name = '{}'",
            ActionKind::Watch.component()
        );
        scalar(&self.db, &sql).await
    }

    /// Watch tasks in one of `statuses`.
    async fn watch_tasks(
        &self,
        statuses: impl IntoIterator<Item = TaskStatus>,
    ) -> anyhow::Result<i64> {
        let statuses: Vec<String> = statuses
            .into_iter()
            .map(|status| format!("'{}'", status.to_value()))
            .collect();
        let sql = format!(
            "SELECT COUNT(*) FROM queue_task WHERE execution_component_name = '{}' \
             AND workflow_status IN ({})",
            ActionKind::Watch.component(),
            statuses.join(", ")
        );
        scalar(&self.db, &sql).await
    }

    /// Waits until no task waits or runs.
    async fn wait_for_empty_queue(&self) -> anyhow::Result<()> {
        while self.watch_tasks(unfinished()).await? > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }
}

/// Makes `watchers` new staff users each watch every person, one statement per watcher, on
/// a connection closed afterwards: what SQLite held for those statements is not the node's.
async fn keep_earlier_watches(url: &str, watchers: usize) -> anyhow::Result<()> {
    server::memory::give_large_blocks_back();
    let db = DatabaseTarget::at(url).open(1).await?;
    for n in 1..=watchers {
        let user = NewStaffUser {
            username: format!("earlier-{n}"),
            display_name: format!("earlier-{n}"),
            role: Role::Staff,
            password: PASSWORD.to_owned(),
        };
        let user = create_user(&db, user).await?;
        watch_everyone(&db, user.id).await;
    }
    db.close().await?;
    Ok(())
}

/// A Watch submission of everyone whose name starts with `name`.
fn watch(name: &str, cookie: &str) -> http::Result<Request<Body>> {
    let body = json!({ "query": { "name": name } }).to_string();
    Request::post("/api/1/caseload/watches")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::COOKIE, cookie)
        .body(Body::from(body))
}

/// A page of the caseload search for `name`, as the dashboard asks for it.
fn caseload_page(name: &str, page: usize, cookie: &str) -> http::Result<Request<Body>> {
    let form = format!("query[q]={name}&query[status]=&query[page]={page}");
    Request::post("/api/search_caseload")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .header(header::COOKIE, cookie)
        .body(Body::from(form))
}

fn get(path: &str, cookie: &str) -> http::Result<Request<Body>> {
    Request::get(path)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
}

/// The statuses of a task that has not finished.
fn unfinished() -> impl Iterator<Item = TaskStatus> {
    TaskStatus::iter().filter(|status| !status.is_terminal())
}

async fn scalar(db: &DatabaseConnection, sql: &str) -> anyhow::Result<i64> {
    let statement = Statement::from_string(db.get_database_backend(), sql);
    let row = db
        .query_one_raw(statement)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no row from {sql}"))?;
    Ok(row.try_get_by_index::<i64>(0)?)
}

/// Response times per kind of request, and the failures.
#[derive(Default)]
struct Timings {
    took: [Vec<Duration>; 4],
    errors: [usize; 4],
}

impl Timings {
    fn record(&mut self, kind: usize, took: Duration, ok: bool) {
        self.took[kind].push(took);
        if !ok {
            self.errors[kind] += 1;
        }
    }

    fn merge(&mut self, other: Timings) {
        for kind in 0..KINDS.len() {
            self.took[kind].extend(&other.took[kind]);
            self.errors[kind] += other.errors[kind];
        }
    }

    fn total(&self) -> usize {
        self.took.iter().map(Vec::len).sum()
    }

    fn summary(&self, kind: usize) -> Summary {
        let mut took = self.took[kind].clone();
        took.sort();
        let at = |q: f64| {
            took.get(((took.len() as f64 * q).ceil() as usize).saturating_sub(1))
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        Summary {
            count: took.len(),
            errors: self.errors[kind],
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

struct Summary {
    count: usize,
    errors: usize,
    p50: f64,
    p99: f64,
    max: f64,
}

impl Summary {
    fn to_json(&self) -> serde_json::Value {
        let round = |ms: f64| (ms * 10.0).round() / 10.0;
        json!({
            "count": self.count,
            "errors": self.errors,
            "p50_ms": round(self.p50),
            "p99_ms": round(self.p99),
            "max_ms": round(self.max),
        })
    }
}
