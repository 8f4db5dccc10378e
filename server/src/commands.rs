//! What each subcommand does; `main` only parses the command line and dispatches here.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use app::api::login_throttle::LoginThrottle;
use app::api::session_store::DatabaseSessionStore;
use app::api::ssr::{AppState, BulkSettings};
use axum::Router;
use caseload::actions::ActionsConfig;
use caseload::admin_alerts::AlertSettings;
use caseload::admin_alerts::webhook::WebhookTarget;
use caseload::email::Mailer;
use caseload::email::send_rate::SendRate;
use caseload::seed::{SeedOptions, seed_people};
use caseload::users::Role;
use queue::database::PoolSettings;
use queue::{AmqpConfig, Registry, Runtime, RuntimeConfig, RuntimeHandle, ShutdownReport, Store};
use tower_sessions::ExpiredDeletion;

use crate::config::{LogFormat, SeedArgs, ServeOptions};
use crate::database_target::DatabaseTarget;
use crate::draining::{self, Draining};
use crate::http_server::{self, ConnectionLimits};
use crate::queue_threads::QueueThreads;
use crate::smtp_settings::{MailSettings, PASSWORD_ENV};
use crate::{demo, site, web};

/// How often expired sign-in sessions are deleted.
const SESSION_CLEANUP_INTERVAL: Duration = Duration::from_secs(3600);

/// A node as `serve` runs it: the dashboard and API, and the queue runtime working the
/// same database on threads of its own.
pub struct Node {
    pub router: Router,
    pub runtime: RuntimeHandle,
    /// What the queue runs on: keep it until `runtime` has shut down (see [`Node::shutdown`]).
    pub queue_threads: QueueThreads,
    /// Begun when the node is to stop: its streams end and `/readyz` answers 503.
    pub draining: Draining,
}

impl Node {
    /// Stops the queue: no more claims, and every running task is asked to stop at its next
    /// checkpoint and handed back (no attempt spent), so another node or this one restarted
    /// carries on from there. A deploy then takes about one batch per node, not as long as
    /// the longest bulk action. `None` if the queue had not stopped within `grace`: what
    /// still runs is then left to the rescue of a crashed node.
    pub async fn shutdown(self, grace: Duration) -> Option<ShutdownReport> {
        let Node {
            runtime,
            queue_threads,
            ..
        } = self;
        let stopped = queue_threads.run(runtime.shutdown_and_cancel());
        match tokio::time::timeout(grace, stopped).await {
            Ok(Ok(report)) => Some(report),
            Ok(Err(error)) => {
                tracing::error!(%error, "the task queue's threads ended abnormally");
                None
            }
            Err(_) => None,
        }
    }
}

/// Opens the database and starts the queue and the web app as `serve` does, without
/// listening: `serve` binds the router to its address, a benchmark drives it in-process.
pub async fn start_node(database: &DatabaseTarget, options: &ServeOptions) -> anyhow::Result<Node> {
    crate::memory::give_large_blocks_back();
    let queue_threads = QueueThreads::start(options.queue_nice)?;
    // The queue's pool is opened from its threads, so its SQLite connection threads (and
    // everything else the queue starts) inherit their priority.
    let runtime = queue_threads
        .run(start_queue(
            database.clone(),
            queue_settings(options, &database.url)?,
        ))
        .await??;
    // People's own pool: busy workers never keep a page or a sign-in waiting for a connection;
    // on PostgreSQL a statement outliving its request is stopped with it.
    let people_db = database
        .connect(&PoolSettings {
            statement_limit: Some(options.request_timeout),
            ..database.pool(options.dashboard_connections)
        })
        .await?;
    let site_root = site::site_root(options.site_root.as_deref());
    if !site_root.join("pkg").is_dir() {
        tracing::warn!(
            site_root = %site_root.display(),
            "no built site found (pkg/ is missing): pages will not hydrate; build with `make build`"
        );
    }
    let leptos_options = site::leptos_options(&site_root, options.listen);
    let people_store = runtime.store().on_pool(people_db.clone());
    tokio::spawn(delete_expired_sessions(people_store.clone()));
    let mut state = AppState::new(
        people_db,
        people_store,
        BulkSettings {
            exports_dir: options.exports_dir.clone(),
            export_row_cap: options.export_row_cap,
            export_retention: options.export_retention,
            import_max_bytes: options.import_max_bytes,
        },
    );
    state.login_throttle = Arc::new(LoginThrottle::new(options.concurrent_password_hashes));
    state.secure_cookies = options.secure_cookies;
    let draining = Draining::default();
    let router = web::router(
        state,
        leptos_options,
        &web::WebOptions {
            secure_cookies: options.secure_cookies,
            request_timeout: options.request_timeout,
            streams_per_user: options.streams_per_user,
            trust_forwarded_for: options.trust_forwarded_for,
            draining: draining.clone(),
        },
    );
    Ok(Node {
        router,
        runtime,
        queue_threads,
        draining,
    })
}

/// Makes the executors once the store is open (the mail relay's rate draws from it).
type RegistryMaker = Box<dyn FnOnce(&Store) -> anyhow::Result<Registry> + Send>;

/// What the queue of a `serve` node is started with.
struct QueueSettings {
    config: RuntimeConfig,
    registry: RegistryMaker,
    worker_connections: u32,
    demo_people: Option<u64>,
}

fn queue_settings(options: &ServeOptions, database_url: &str) -> anyhow::Result<QueueSettings> {
    Ok(QueueSettings {
        config: RuntimeConfig {
            system_id: options.system_id.clone(),
            workers: options.workers,
            prefetch: options.prefetch,
            sweep_interval: options.sweep_interval,
            park_after_crashes: options.park_after_crashes,
            retention: options.task_retention,
            batches_while_people_write: options.batches_while_people_write,
            amqp: options.amqp_url.as_deref().map(AmqpConfig::new),
            ..RuntimeConfig::default()
        },
        registry: {
            let (options, database_url) = (options.clone(), database_url.to_owned());
            Box::new(move |store| registry(&options, &database_url, store))
        },
        worker_connections: options.worker_connections,
        demo_people: options.demo.then_some(options.demo_people),
    })
}

/// Opens the queue's pool (migrating the database first), adds the demo data if asked, and
/// starts the queue runtime on the calling runtime.
async fn start_queue(
    database: DatabaseTarget,
    settings: QueueSettings,
) -> anyhow::Result<RuntimeHandle> {
    let db = database.open(settings.worker_connections).await?;
    if let Some(people) = settings.demo_people {
        demo::ensure_demo_data(&db, people).await?;
    }
    let mut store = Store::new(db);
    if let Some(amqp) = &settings.config.amqp {
        store = store
            .with_amqp_hints(amqp)
            .context("setting up RabbitMQ wake-up hints")?;
        tracing::info!(broker = %redact(&amqp.url), queue = %amqp.queue, "RabbitMQ wake-up hints on");
    }
    let workers = settings.config.workers;
    let registry = (settings.registry)(&store)?;
    let runtime = Runtime::start(settings.config, store, registry)
        .await
        .context("starting the task queue")?;
    tracing::info!(node = %runtime.node().node_id, workers, "task queue started");
    Ok(runtime)
}

/// `serve`: the dashboard and API until SIGINT/SIGTERM, then a drain ([`Draining`]) of at
/// most `--shutdown-grace`: HTTP stops accepting and finishes what is in flight while the
/// queue hands its running tasks back; whatever is still open at the end is cut off.
///
/// With text logs it also prints where it listens, as a line of its own for people and
/// scripts; JSON logs stay one object a line (the `serving` line has the address).
pub async fn serve(
    database: &DatabaseTarget,
    options: ServeOptions,
    log_format: LogFormat,
) -> anyhow::Result<()> {
    // Before anything else, so a stop during start-up is a drain, not a kill.
    let signals = draining::StopSignals::listen().context("listening for SIGINT and SIGTERM")?;
    // The address first: a node that cannot listen must not have started claiming tasks.
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("listening on {}", options.listen))?;
    let address = listener.local_addr()?;
    let node = start_node(database, &options).await?;
    tracing::info!(%address, system_id = %options.system_id, "serving");
    if log_format == LogFormat::Text {
        println!("bulkq is running at http://{address}");
    }
    let draining = node.draining.clone();
    let limits = ConnectionLimits {
        header_read_timeout: options.header_read_timeout,
        max_connections: options.max_connections,
    };
    let mut http = tokio::spawn(http_server::serve(
        listener,
        node.router.clone(),
        limits,
        draining.clone(),
    ));
    tokio::spawn(draining::begin_on_signal(signals, draining.clone()));
    draining.begun().await;
    let grace = options.shutdown_grace;
    let (http_drained, queue) =
        tokio::join!(tokio::time::timeout(grace, &mut http), node.shutdown(grace));
    match queue {
        Some(report) => tracing::info!(handed_back = report.cancelled, "task queue stopped"),
        None => tracing::warn!(
            ?grace,
            "the task queue did not stop within the grace period; its tasks will be rescued"
        ),
    }
    match http_drained {
        Ok(ended) => ended.context("the HTTP server"),
        Err(_) => {
            http.abort();
            tracing::warn!(
                ?grace,
                "requests still open after the grace period were cut off"
            );
            Ok(())
        }
    }
}

/// The executors this node runs: the bulk actions, with their export directory, mail
/// transport (and its rate, drawn from `store`) and batch limits.
fn registry(options: &ServeOptions, database_url: &str, store: &Store) -> anyhow::Result<Registry> {
    let transport = MailSettings {
        relay_url: options.smtp_url.as_ref(),
        relay_address: options.smtp_relay.as_ref(),
        password_file: options.smtp_password_file.as_deref(),
        password_env: std::env::var(PASSWORD_ENV).ok(),
        ca_file: options.smtp_ca_file.as_deref(),
        timeout: options.smtp_timeout,
        outbox_dir: &options.outbox_dir,
    }
    .transport()
    .context("the mail relay settings")?;
    let mut mailer =
        Mailer::new(&options.mail_from, &transport).context("setting up bulk email")?;
    if let Some(per_second) = options.smtp_rate {
        mailer = mailer.with_rate(SendRate::new(store.clone(), per_second));
    }
    let webhook = match (&options.alert_webhook_url, &options.alert_webhook_secret) {
        (Some(url), Some(secret)) => {
            Some(WebhookTarget::new(url, secret).map_err(anyhow::Error::msg)?)
        }
        _ => None,
    };
    let mut registry = Registry::new();
    caseload::actions::register(
        &mut registry,
        ActionsConfig {
            exports_dir: options.exports_dir.clone(),
            export_retention: options.export_retention,
            mailer,
            batch_size: options.batch_size,
            batch_time_while_people_write: options.batch_time_while_people_write.unwrap_or_else(
                || caseload::actions::batch_time_default(queue::database::backend_of(database_url)),
            ),
            email_log_retention: options.email_log_retention,
            audit_retention: options.audit_retention,
            alerts: AlertSettings {
                wait_over: options.alert_wait_over,
                webhook,
            },
        },
    )
    .with_context(|| format!("preparing {}", options.exports_dir.display()))?;
    for (action, limit) in &options.action_limits {
        registry
            .limit_running(action, *limit)
            .with_context(|| format!("--action-limit {action}={limit}"))?;
    }
    Ok(registry)
}

/// `migrate`.
pub async fn migrate(database: &DatabaseTarget) -> anyhow::Result<()> {
    database.migrate().await?;
    println!("The database schema is up to date.");
    Ok(())
}

/// `seed --people N`.
pub async fn seed(database: &DatabaseTarget, args: SeedArgs) -> anyhow::Result<()> {
    let db = database
        .open(queue::database::DEFAULT_MAX_CONNECTIONS)
        .await?;
    let coaches = caseload::users::ids_with_role(&db, Role::Staff).await?;
    let started = std::time::Instant::now();
    let added = seed_people(
        &db,
        &SeedOptions {
            people: args.people,
            seed: args.seed,
            coaches,
        },
    )
    .await?;
    println!(
        "Added {added} people in {:.1} s.",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Deletes expired sessions and recovered sign-in limits now and then, so the tables do
/// not grow without bound.
async fn delete_expired_sessions(store: Store) {
    let sessions = DatabaseSessionStore::new(store.clone());
    let mut tick = tokio::time::interval(SESSION_CLEANUP_INTERVAL);
    loop {
        tick.tick().await;
        if let Err(error) = sessions.delete_expired().await {
            tracing::warn!(%error, "deleting expired sessions failed");
        }
        if let Err(error) = app::api::login_throttle::delete_recovered(&store).await {
            tracing::warn!(%error, "deleting recovered sign-in limits failed");
        }
    }
}

/// The directory a `sqlite://PATH?...` URL's file lives in, if it names a file.
pub(crate) fn sqlite_directory(database_url: &str) -> Option<&Path> {
    sqlite_file(database_url)?
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
}

/// The file a `sqlite://PATH?...` URL names, if it names one.
pub(crate) fn sqlite_file(database_url: &str) -> Option<&Path> {
    let path = database_url.strip_prefix("sqlite://")?;
    let path = path.split('?').next()?;
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(Path::new(path))
}

/// The URL (of the database or the broker) without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_sqlite_directory_to_create() {
        assert_eq!(
            sqlite_directory("sqlite://data/bulkq.db?mode=rwc"),
            Some(Path::new("data"))
        );
        assert_eq!(
            sqlite_directory("sqlite:///var/lib/bulkq/q.db"),
            Some(Path::new("/var/lib/bulkq"))
        );
        assert_eq!(sqlite_directory("sqlite://bulkq.db"), None);
        assert_eq!(sqlite_directory("sqlite::memory:"), None);
        assert_eq!(sqlite_directory("postgres://h/db"), None);
    }

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://data/x.db"), "sqlite://data/x.db");
        assert_eq!(
            redact("amqp://guest:guest@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
    }
}
