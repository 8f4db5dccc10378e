//! Command-line flags and environment variables (clap), for the server and its subcommands.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use queue::database::WalCheckpoints;

use crate::database_target::DatabaseTarget;
use crate::smtp_settings::{RelayAddress, RelayUrl};

/// The database used when neither `--database-url` nor `DATABASE_URL` says otherwise: an
/// embedded SQLite file under `data/`, created on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/bulkq.db?mode=rwc";

/// Default `--dashboard-connections`.
pub const DASHBOARD_CONNECTIONS_DEFAULT: u32 = 8;

/// Default `--queue-nice`: the queue's threads weigh about a tenth of the dashboard's when
/// both want a core (ADR 0033).
pub const QUEUE_NICE_DEFAULT: u8 = 10;

/// bulkq: bulk actions on a caseload, run by a transactional task queue.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalOptions,
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every subcommand understands.
#[derive(Debug, Args)]
pub struct GlobalOptions {
    /// Database to use: `sqlite://PATH?mode=rwc` (embedded, the default) or
    /// `postgres://USER@HOST:PORT/DB` (several nodes may share one PostgreSQL database).
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
    /// Log filter in tracing's `EnvFilter` syntax, e.g. `info` or `bulkq=debug,info`.
    #[arg(long, env = "BULKQ_LOG", default_value = "info", global = true)]
    pub log_level: String,
    /// How log lines are written: `text` (coloured only on a terminal) or `json` (one
    /// object a line, with the fields of its spans: a request's id, a task's).
    #[arg(long, env = "BULKQ_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    /// Who copies a SQLite database's WAL back into its file: `node` (the node, as it
    /// writes) or `replicator` (never the node: an external replicator such as Litestream
    /// does, as its authors advise; without one the WAL grows without end). Every process
    /// opening the database must be given the same.
    #[arg(long, env = "BULKQ_WAL_CHECKPOINTS", default_value = "node", global = true,
          value_parser = clap::builder::TypedValueParser::try_map(
              clap::builder::PossibleValuesParser::new(WalCheckpoints::NAMES),
              |name| name.parse::<WalCheckpoints>()))]
    pub wal_checkpoints: WalCheckpoints,
    /// A TOML file of settings keyed by flag name (`workers = 8`); a flag on the command
    /// line or in the environment wins over it (see `config_file`).
    #[arg(long, env = "BULKQ_CONFIG", global = true)]
    pub config: Option<PathBuf>,
}

impl GlobalOptions {
    /// The database the options name.
    pub fn database(&self) -> DatabaseTarget {
        DatabaseTarget {
            url: self.database_url.clone(),
            wal_checkpoints: self.wal_checkpoints,
        }
    }
}

/// The log lines' format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the web dashboard, the JSON API and the queue workers (the default).
    Serve(Box<ServeOptions>),
    /// Apply pending database migrations and exit.
    Migrate,
    /// Add generated demo people to the caseload.
    Seed(SeedArgs),
    /// Manage staff accounts: list, create, disable, enable, set-role, reset-password,
    /// set-email.
    #[command(subcommand)]
    User(UserCommand),
    /// Bring data in from a file.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Copy the SQLite database, consistently, while nodes work on it (for PostgreSQL,
    /// prints the `pg_dump` to run instead).
    Backup(BackupArgs),
}

/// Options of `backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The copy to write; it must not exist yet.
    #[arg(long)]
    pub to: PathBuf,
}

/// `import ...`.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Import people from a CSV file of the school's records (UTF-8, a header row naming
    /// the columns): preview it, then apply it as a queue task and follow it to the end.
    People(ImportPeopleArgs),
}

/// Options of `import people`.
#[derive(Debug, Args)]
pub struct ImportPeopleArgs {
    /// The CSV file.
    pub file: PathBuf,
    /// The admin the import acts as (recorded as who changed each person).
    #[arg(long = "as", env = "BULKQ_IMPORT_AS")]
    pub as_user: String,
    /// Show what the import would do, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also retire everyone the file does not name.
    #[arg(long)]
    pub full_sync: bool,
    /// Refuse a file larger than this many bytes.
    #[arg(long, env = "BULKQ_IMPORT_MAX_BYTES",
          default_value_t = caseload::people_import::upload::MAX_BYTES_DEFAULT)]
    pub max_bytes: u64,
    /// Rows per batch (and per checkpoint).
    #[arg(long, default_value_t = caseload::actions::BATCH_SIZE_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub batch_size: u64,
    /// Write the rows that could not be imported, with their lines and reasons, to this CSV
    /// file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// `user ...`: what admins do to staff accounts, from a shell.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// List every account with its role and state.
    List,
    /// Create an account; without --password it gets a one-time password to change at its
    /// first sign-in.
    Create(CreateUserArgs),
    /// Disable an account: its sessions, live streams and tokens stop at once, its waiting
    /// tasks end without running.
    Disable(UsernameArg),
    /// Enable a disabled account.
    Enable(UsernameArg),
    /// Give an account another role.
    SetRole(SetRoleArgs),
    /// Give an account a one-time password (ending its sessions), printed once.
    ResetPassword(UsernameArg),
    /// Set the address an account is told of its people's news at (none: remove it).
    SetEmail(SetEmailArgs),
}

/// Options of `user set-email`.
#[derive(Debug, Args)]
pub struct SetEmailArgs {
    pub username: String,
    /// The address; leave it out to remove the one on file.
    pub email: Option<String>,
}

/// An account, by username.
#[derive(Debug, Args)]
pub struct UsernameArg {
    pub username: String,
}

/// Options of `user set-role`.
#[derive(Debug, Args)]
pub struct SetRoleArgs {
    pub username: String,
    /// `staff` or `admin`.
    pub role: String,
}

/// `ACTION=N` of `--action-limit`, N from 1.
fn action_limit(text: &str) -> Result<(String, u32), String> {
    let (action, limit) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not ACTION=N"))?;
    let limit: u32 = limit
        .trim()
        .parse()
        .ok()
        .filter(|limit| *limit >= 1)
        .ok_or_else(|| format!("the limit of {action:?} must be a whole number from 1"))?;
    Ok((action.trim().to_owned(), limit))
}

/// Options of `serve`.
// `Parser` (which includes `Args`) so the defaults can be had on their own, for `bulkq`
// run without a subcommand.
#[derive(Debug, Parser, Clone)]
pub struct ServeOptions {
    /// Address and port to listen on.
    #[arg(long, env = "BULKQ_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: SocketAddr,
    /// This node's name; with the start-up time it identifies the node in a cluster.
    #[arg(long, env = "BULKQ_SYSTEM_ID", default_value = "bulkq")]
    pub system_id: String,
    /// Directory holding the built site (`pkg/` with the WASM, JS and CSS). Defaults to the
    /// `site` directory beside the binary's build directory (`target/site`), so the server
    /// finds it from any working directory.
    #[arg(long, env = "LEPTOS_SITE_ROOT")]
    pub site_root: Option<PathBuf>,
    /// On first start, create the demo users (printing their passwords) and demo people.
    #[arg(long, env = "BULKQ_DEMO")]
    pub demo: bool,
    /// How many people the demo caseload gets on first start.
    #[arg(long, env = "BULKQ_DEMO_PEOPLE", default_value_t = 10_000)]
    pub demo_people: u64,
    /// Database connections of the task queue (workers, claims, upkeep).
    #[arg(long, env = "BULKQ_WORKER_CONNECTIONS", default_value_t = queue::database::DEFAULT_MAX_CONNECTIONS,
          value_parser = clap::value_parser!(u32).range(2..=1_000))]
    pub worker_connections: u32,
    /// Database connections kept for people (pages, sign-ins, submissions, live updates),
    /// which the workers can never take however busy they are.
    #[arg(long, env = "BULKQ_DASHBOARD_CONNECTIONS", default_value_t = DASHBOARD_CONNECTIONS_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub dashboard_connections: u32,
    /// How far below the dashboard's the task queue's CPU priority is, in nice steps (0–19;
    /// 0 runs both alike). People's requests then get the cores first and the queue takes
    /// what they leave.
    #[arg(long, env = "BULKQ_QUEUE_NICE", default_value_t = QUEUE_NICE_DEFAULT,
          value_parser = clap::value_parser!(u8).range(0..=19))]
    pub queue_nice: u8,
    /// While people write through this node (a sign-in or a submission within 30 s), how
    /// many batch transactions its tasks may have open at once, so that a person's query
    /// still finds a core; 0 sets no limit. Defaults to the machine's cores.
    #[arg(long, env = "BULKQ_BATCHES_WHILE_PEOPLE_WRITE",
          default_value_t = queue::runtime::batches_while_people_write_default())]
    pub batches_while_people_write: usize,
    /// Tasks this node executes at once (its executor slots).
    #[arg(long, env = "BULKQ_WORKERS", default_value_t = queue::runtime::WORKERS_DEFAULT)]
    pub workers: usize,
    /// The most claimed tasks this node may hold beyond its free slots, to start them
    /// without a round trip. It holds only what its slots finish within 20 ms at the pace
    /// of its recent tasks (so none while bulk actions run); 0 turns holding off. Default:
    /// 1,024 on PostgreSQL, 256 on SQLite.
    #[arg(long, env = "BULKQ_PREFETCH")]
    pub prefetch: Option<usize>,
    /// How often this node looks for due tasks without being woken (by a commit it saw, a
    /// PostgreSQL notification or a RabbitMQ hint): the safety net for a missed wake-up.
    #[arg(long, env = "BULKQ_SWEEP_INTERVAL", default_value = "1s", value_parser = positive_duration)]
    pub sweep_interval: Duration,
    /// On SIGTERM/SIGINT, the longest the node's stop may take: requests in flight finish
    /// and running tasks are handed back at their next checkpoint (without spending an
    /// attempt) meanwhile; whatever is still open then is cut off.
    #[arg(long, env = "BULKQ_SHUTDOWN_GRACE", default_value = "30s", value_parser = humantime::parse_duration)]
    pub shutdown_grace: Duration,
    /// Mark the session cookie `Secure` (only sent over HTTPS); turn on behind TLS.
    #[arg(long, env = "BULKQ_SECURE_COOKIES")]
    pub secure_cookies: bool,
    /// Where exports are written and downloaded from (one `<task id>.csv` each). Local to
    /// the node: in a cluster, give every node the same shared directory.
    #[arg(long, env = "BULKQ_EXPORTS_DIR", default_value = "data/exports")]
    pub exports_dir: PathBuf,
    /// How long a finished export stays downloadable; then a periodic job deletes its file
    /// (and sooner, when its task is pruned). Downloads after that answer 410.
    #[arg(long, env = "BULKQ_EXPORT_RETENTION", default_value = "7days", value_parser = positive_duration)]
    pub export_retention: Duration,
    /// The most rows one export may have.
    #[arg(long, env = "BULKQ_EXPORT_ROW_CAP", default_value_t = caseload::export::DEFAULT_ROW_CAP)]
    pub export_row_cap: u64,
    /// The largest people file (CSV) an admin may upload for import on the dashboard.
    #[arg(long, env = "BULKQ_IMPORT_MAX_BYTES",
          default_value_t = caseload::people_import::upload::MAX_BYTES_DEFAULT)]
    pub import_max_bytes: u64,
    /// A plain SMTP relay for bulk email, as `host:port`: no TLS and no authentication (a
    /// local MTA or a smarthost on a trusted network). Without it or `--smtp-url`, messages
    /// are written as `.eml` files to `--outbox-dir` and nothing leaves the machine.
    #[arg(long, env = "BULKQ_SMTP_RELAY", conflicts_with = "smtp_url")]
    pub smtp_relay: Option<RelayAddress>,
    /// An SMTP relay spoken to over TLS, with its certificate verified:
    /// `smtps://[USER@]HOST[:PORT]` (TLS from the first byte, port 465 by default) or
    /// `smtp://[USER@]HOST[:PORT]` (STARTTLS required, port 587). With a USER (percent-encode
    /// an `@` in it as `%40`), AUTH PLAIN or LOGIN with the password from the environment
    /// variable `BULKQ_SMTP_PASSWORD` or `--smtp-password-file`; never in the URL.
    #[arg(long, env = "BULKQ_SMTP_URL")]
    pub smtp_url: Option<RelayUrl>,
    /// At most this many messages a second through the relay, counted across every node of
    /// the cluster (a database-kept allowance); unlimited when not given.
    #[arg(long, env = "BULKQ_SMTP_RATE", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub smtp_rate: Option<u32>,
    /// At most N tasks of an action run at once across the cluster, as `ACTION=N` (e.g.
    /// `caseload.email=2`); repeat the flag, or separate by commas, for several. Every node
    /// must be given the same limits.
    #[arg(long = "action-limit", env = "BULKQ_ACTION_LIMITS", value_delimiter = ',', value_parser = action_limit)]
    pub action_limits: Vec<(String, u32)>,
    /// A file whose first line is the password of the `--smtp-url` user (instead of the
    /// `BULKQ_SMTP_PASSWORD` environment variable).
    #[arg(long, env = "BULKQ_SMTP_PASSWORD_FILE")]
    pub smtp_password_file: Option<PathBuf>,
    /// Certificate authorities (PEM) to trust for the `--smtp-url` relay besides the
    /// system's, e.g. an organisation's own CA.
    #[arg(long, env = "BULKQ_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<PathBuf>,
    /// How long one SMTP command may take before the send counts as a transient failure.
    #[arg(long, env = "BULKQ_SMTP_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub smtp_timeout: Duration,
    /// Where messages go when no relay is given.
    #[arg(long, env = "BULKQ_OUTBOX_DIR", default_value = "data/outbox")]
    pub outbox_dir: PathBuf,
    /// The sender of bulk email.
    #[arg(
        long,
        env = "BULKQ_MAIL_FROM",
        default_value = "bulkq <bulkq@localhost>"
    )]
    pub mail_from: String,
    /// Optional RabbitMQ wake-up hints, e.g. `amqp://guest:guest@127.0.0.1:5672/%2f` (off
    /// when not given). This node then publishes the id of every task it enqueues to the
    /// durable queue `bulkq.wake` after the commit, and wakes its workers for every id it
    /// consumes from there. Hints only: the database stays the list of tasks, a lost or
    /// doubled message never loses or doubles one, and the periodic sweep still finds
    /// everything; a broker that is down only delays new work to the sweep. Plain `amqp://`
    /// (no TLS).
    #[arg(long, env = "BULKQ_AMQP_URL")]
    pub amqp_url: Option<String>,
    /// After this many of its nodes died while running it (a crash, not an error), a task is
    /// parked at FAILURE as the suspected cause instead of being handed to another node;
    /// an admin can retry it.
    #[arg(long, env = "BULKQ_PARK_AFTER_CRASHES", default_value_t = queue::runtime::PARK_AFTER_CRASHES_DEFAULT,
          value_parser = clap::value_parser!(i32).range(1..))]
    pub park_after_crashes: i32,
    /// How long finished tasks (and their history) are kept before they are deleted.
    #[arg(long, env = "BULKQ_TASK_RETENTION", default_value = "7days", value_parser = positive_duration)]
    pub task_retention: Duration,
    /// How long the email send log remembers who was sent what (a waiting or running
    /// task's sends are kept whatever their age).
    #[arg(long, env = "BULKQ_EMAIL_LOG_RETENTION", default_value = "90days", value_parser = positive_duration)]
    pub email_log_retention: Duration,
    /// How long the audit trail keeps who did what (admin acts, pauses, accounts, tokens);
    /// then a periodic job forgets it.
    #[arg(long, env = "BULKQ_AUDIT_RETENTION", default_value = "400days", value_parser = positive_duration)]
    pub audit_retention: Duration,
    /// Admins who asked for alerts are emailed (and the webhook posted) once the oldest due
    /// task has waited this long to start; again after the wait has fallen under half of it.
    #[arg(long, env = "BULKQ_ALERT_WAIT_OVER", default_value = "15min", value_parser = positive_duration)]
    pub alert_wait_over: Duration,
    /// Where admins' alerts (a task failed or was parked, tasks waiting too long) are posted
    /// as JSON, signed with `--alert-webhook-secret`; retried through the queue.
    #[arg(
        long,
        env = "BULKQ_ALERT_WEBHOOK_URL",
        requires = "alert_webhook_secret"
    )]
    pub alert_webhook_url: Option<String>,
    /// The key the webhook's bodies are signed with (HMAC-SHA256 in `X-Bulkq-Signature`);
    /// at least 16 characters.
    #[arg(long, env = "BULKQ_ALERT_WEBHOOK_SECRET", hide_env_values = true)]
    pub alert_webhook_secret: Option<String>,
    /// How long a request may take to produce its response before it is answered 503 (a
    /// live update stream's body may go on).
    #[arg(long, env = "BULKQ_REQUEST_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,
    /// How long a client may take to send a request's headers, from the connection's start
    /// or the end of its previous response; so also how long an idle kept-alive connection
    /// stays open.
    #[arg(long, env = "BULKQ_HEADER_READ_TIMEOUT", default_value = "20s", value_parser = positive_duration)]
    pub header_read_timeout: Duration,
    /// HTTP connections this node serves at once; further clients wait (in the system's
    /// accept queue) until one ends.
    #[arg(long, env = "BULKQ_MAX_CONNECTIONS", default_value_t = crate::http_server::MAX_CONNECTIONS_DEFAULT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_connections: usize,
    /// Live update streams (`/api/1/task-events`) one user may hold open on this node; one
    /// more is answered 429.
    #[arg(long, env = "BULKQ_STREAMS_PER_USER", default_value_t = crate::api::stream_limit::STREAMS_PER_USER_DEFAULT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000))]
    pub streams_per_user: usize,
    /// Password hashes (sign-ins) computed at once; more sign-ins wait their turn, and are
    /// answered 503 after 10 s. Each takes about 19 MiB and a core for a moment.
    #[arg(long, env = "BULKQ_CONCURRENT_PASSWORD_HASHES", default_value_t = app::api::login_throttle::CONCURRENT_HASHES_DEFAULT,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub concurrent_password_hashes: usize,
    /// Behind a reverse proxy: take each client's address (for the per-client sign-in
    /// limit) from the last hop of `X-Forwarded-For`, which that proxy appends. Without a
    /// proxy, leave it off: clients could then claim any address.
    #[arg(long, env = "BULKQ_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
    /// The most people per batch (and per checkpoint) of a bulk action; while people are
    /// writing, batches are sized to hold their transaction about
    /// `--batch-time-while-people-write`.
    #[arg(long, env = "BULKQ_BATCH_SIZE", default_value_t = caseload::actions::BATCH_SIZE_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub batch_size: u64,
    /// While people write, how long one batch of a bulk action should hold its transaction:
    /// on SQLite, about the longest a sign-in or a submission waits behind the queue.
    /// Shorter batches cost the queue speed (a commit each). Defaults to 25ms on SQLite and
    /// 100ms on PostgreSQL.
    #[arg(long, env = "BULKQ_BATCH_TIME_WHILE_PEOPLE_WRITE", value_parser = batch_time)]
    pub batch_time_while_people_write: Option<Duration>,
}

/// A batch's time while people write: 5 ms to 10 s (`40ms`, `1s`).
fn batch_time(value: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(value).map_err(|e| e.to_string())?;
    if !(Duration::from_millis(5)..=Duration::from_secs(10)).contains(&duration) {
        return Err("must be between 5ms and 10s".into());
    }
    Ok(duration)
}

/// A duration of at least a second (`90s`, `12h`, `7days`).
fn positive_duration(value: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(value).map_err(|e| e.to_string())?;
    if duration < Duration::from_secs(1) {
        return Err("must be at least 1s".into());
    }
    Ok(duration)
}

impl Default for ServeOptions {
    /// The options `serve` gets from its environment and defaults alone.
    fn default() -> Self {
        Self::parse_from(["bulkq"])
    }
}

/// Options of `seed`.
#[derive(Debug, Args)]
pub struct SeedArgs {
    /// How many people to add.
    #[arg(long)]
    pub people: u64,
    /// Random seed: the same seed adds the same people.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// Options of `user create`.
#[derive(Debug, Args)]
pub struct CreateUserArgs {
    /// The name to sign in with.
    #[arg(long)]
    pub username: String,
    /// The name shown in the dashboard (defaults to the username).
    #[arg(long)]
    pub display_name: Option<String>,
    /// `staff` or `admin`.
    #[arg(long, default_value = "staff")]
    pub role: String,
    /// The password; when omitted a one-time password is generated and printed, and the
    /// user chooses their own at first sign-in.
    #[arg(long, env = "BULKQ_PASSWORD")]
    pub password: Option<String>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn no_arguments_means_serve_on_the_embedded_database() {
        let cli = Cli::try_parse_from(["bulkq"]).unwrap();
        assert!(cli.command.is_none());
        let serve = ServeOptions::default();
        assert_eq!(serve.listen, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(serve.system_id, "bulkq");
        assert!(!serve.demo);
        assert_eq!(serve.demo_people, 10_000);
        assert_eq!(serve.workers, 16);
        assert_eq!(serve.worker_connections, 16);
        assert_eq!(serve.dashboard_connections, 8);
        assert_eq!(serve.queue_nice, 10);
        assert_eq!(serve.shutdown_grace, Duration::from_secs(30));
        assert_eq!(serve.exports_dir, PathBuf::from("data/exports"));
        assert_eq!(serve.export_row_cap, 1_000_000);
        assert_eq!(serve.export_retention, Duration::from_secs(7 * 24 * 3600));
        assert_eq!(serve.smtp_relay, None);
        assert_eq!(serve.smtp_url, None);
        assert_eq!(serve.amqp_url, None);
        assert_eq!(serve.batch_size, 5_000);
        assert_eq!(serve.batch_time_while_people_write, None, "the backend's");
        assert_eq!(serve.park_after_crashes, 2);
        assert_eq!(serve.request_timeout, Duration::from_secs(30));
        assert_eq!(serve.streams_per_user, 6);
        assert_eq!(serve.header_read_timeout, Duration::from_secs(20));
        assert_eq!(serve.task_retention, queue::runtime::RETENTION_DEFAULT);
        assert_eq!(
            serve.email_log_retention,
            caseload::email::log_retention::EMAIL_LOG_RETENTION_DEFAULT
        );
        assert_eq!(
            serve.audit_retention,
            caseload::audit::AUDIT_RETENTION_DEFAULT
        );
        assert_eq!(
            serve.alert_wait_over,
            caseload::admin_alerts::WAIT_OVER_DEFAULT
        );
        assert_eq!(serve.alert_webhook_url, None);
        assert_eq!(serve.max_connections, 768);
        assert_eq!(serve.concurrent_password_hashes, 2);
        assert!(!serve.trust_forwarded_for);
    }

    #[test]
    fn rabbitmq_wake_ups_are_off_unless_a_url_is_given() {
        let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
        let serve = ServeOptions::parse_from(["bulkq", "--amqp-url", url]);
        assert_eq!(serve.amqp_url.as_deref(), Some(url));
        let Some(Command::Serve(serve)) = Cli::try_parse_from(["bulkq", "serve"]).unwrap().command
        else {
            panic!("expected serve")
        };
        assert_eq!(serve.amqp_url, None);
    }

    #[test]
    fn action_limits_and_the_send_rate_are_read_and_checked() {
        let serve = ServeOptions::parse_from([
            "bulkq",
            "--action-limit",
            "caseload.email=2,caseload.export=1",
            "--action-limit",
            " caseload.watch = 3",
            "--smtp-rate",
            "50",
        ]);
        assert_eq!(
            serve.action_limits,
            [
                ("caseload.email".to_owned(), 2),
                ("caseload.export".to_owned(), 1),
                ("caseload.watch".to_owned(), 3),
            ]
        );
        assert_eq!(serve.smtp_rate, Some(50));
        assert!(ServeOptions::parse_from(["bulkq"]).action_limits.is_empty());
        for (flag, value) in [
            ("--action-limit", "caseload.email=0"),
            ("--action-limit", "caseload.email"),
            ("--action-limit", "caseload.email=many"),
            ("--smtp-rate", "0"),
        ] {
            assert!(
                ServeOptions::try_parse_from(["bulkq", flag, value]).is_err(),
                "{value}"
            );
        }
    }

    #[test]
    fn one_relay_at_most() {
        let serve = ServeOptions::parse_from(["bulkq", "--smtp-relay", "mail.example.edu:2525"]);
        assert_eq!(serve.smtp_relay.map(|relay| relay.port), Some(2525));
        let both = ServeOptions::try_parse_from([
            "bulkq",
            "--smtp-relay",
            "mail.example.edu:25",
            "--smtp-url",
            "smtps://mail.example.edu",
        ]);
        assert!(both.is_err());
        assert!(ServeOptions::try_parse_from(["bulkq", "--batch-size", "0"]).is_err());
        for (flag, value) in [
            ("--batch-time-while-people-write", "0s"),
            ("--batch-time-while-people-write", "1min"),
            ("--queue-nice", "20"),
            ("--queue-nice", "-1"),
        ] {
            assert!(ServeOptions::try_parse_from(["bulkq", flag, value]).is_err());
        }
        assert!(ServeOptions::try_parse_from(["bulkq", "--export-retention", "0s"]).is_err());
    }

    #[test]
    fn flags_override_defaults() {
        let cli = Cli::try_parse_from([
            "bulkq",
            "--database-url",
            "postgres://postgres@127.0.0.1/x",
            "serve",
            "--listen",
            "0.0.0.0:8080",
            "--system-id",
            "node-a",
            "--demo",
            "--shutdown-grace",
            "1m 30s",
        ])
        .unwrap();
        assert_eq!(cli.global.database_url, "postgres://postgres@127.0.0.1/x");
        let Some(Command::Serve(serve)) = cli.command else {
            panic!("expected serve")
        };
        assert_eq!(serve.listen.port(), 8080);
        assert_eq!(serve.system_id, "node-a");
        assert!(serve.demo);
        assert_eq!(serve.shutdown_grace, Duration::from_secs(90));
    }

    #[test]
    fn subcommands_parse_their_arguments() {
        let cli =
            Cli::try_parse_from(["bulkq", "seed", "--people", "1000", "--seed", "7"]).unwrap();
        let Some(Command::Seed(seed)) = cli.command else {
            panic!("expected seed")
        };
        assert_eq!((seed.people, seed.seed), (1000, 7));

        let cli = Cli::try_parse_from([
            "bulkq",
            "user",
            "create",
            "--username",
            "kim",
            "--role",
            "admin",
        ])
        .unwrap();
        let Some(Command::User(UserCommand::Create(user))) = cli.command else {
            panic!("expected user create")
        };
        assert_eq!(
            (user.username.as_str(), user.role.as_str()),
            ("kim", "admin")
        );
        let cli = Cli::try_parse_from(["bulkq", "user", "set-role", "kim", "staff"]).unwrap();
        let Some(Command::User(UserCommand::SetRole(args))) = cli.command else {
            panic!("expected user set-role")
        };
        assert_eq!(
            (args.username.as_str(), args.role.as_str()),
            ("kim", "staff")
        );
    }

    #[test]
    fn bad_input_is_rejected_with_a_message() {
        let error = Cli::try_parse_from(["bulkq", "serve", "--listen", "nowhere"]).unwrap_err();
        assert!(error.to_string().contains("--listen"));
        assert!(
            Cli::try_parse_from(["bulkq", "seed"]).is_err(),
            "--people is required"
        );
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
