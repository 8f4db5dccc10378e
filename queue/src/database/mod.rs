//! Opening a database connection with the settings the queue relies on.
//!
//! The queue's guarantees (an enqueue that committed is never lost, a claim is taken by one
//! worker) rest on the database's own durability and locking, so the SQLite connection is
//! opened in WAL mode (readers never block the single writer), with `synchronous = FULL`
//! (a commit is on disk before it returns) and a busy timeout (writers queue up instead of
//! failing with `SQLITE_BUSY`). PostgreSQL needs no special settings.

use std::time::Duration;

use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, SqliteTransactionMode, SqlxSqliteConnector, TransactionOptions, TransactionTrait,
};
use sea_orm_migration::MigratorTrait;

mod sqlite_statement_limit;

/// Connections in a pool unless the caller asks otherwise. SQLite has one writer at a time
/// whatever the pool size; extra connections only serve concurrent readers (dashboards).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How long a SQLite writer waits for the write lock before giving up with `SQLITE_BUSY`.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Prepared statements each SQLite connection keeps (sqlx's default is 100).
///
/// A statement whose text depends on a list's length (a multi-row INSERT's last, shorter
/// chunk, a claim sized to free slots) is a statement of its own for every length, and
/// SQLite compiles each into a program of its own size, so with sqlx's default cache on
/// every connection a bulk status change held far more memory than it needed (ADR 0014; id
/// lists are one parameter now, see [`crate::IdListFilter`]). The statements a node repeats
/// (claim, checkpoint, heartbeat) are a handful and stay cached.
///
/// PostgreSQL keeps sqlx's 100: the same cap saves memory there too (ADR 0014), but a CI run
/// with it saw a periodic job stop after one run, so it waits until that is understood.
const STATEMENT_CACHE: usize = 16;

/// WAL pages after which a commit copies the WAL back into the database file (SQLite's
/// default is 1,000 pages, 4 MB).
///
/// A bulk status change rewrites entries of name-ordered indexes all over the file: a
/// batch dirties more pages than the default allows, so every batch's commit also wrote
/// those pages back, and the next batch dirtied most of the same pages again.
/// Checkpointing every 40,000 pages (160 MB of WAL) writes a page back once for many
/// batches, which makes a large status change markedly faster (ADR 0015). The queue's
/// drain and commit-to-start latency did not move. A running node copies the WAL back
/// itself, every half second outside the write gate (`Store::checkpoint_wal`, ADR 0052), so
/// the mark is a backstop: the commit that crosses it waits for the whole copy, and so do
/// the writers queued behind it on the gate.
const SQLITE_WAL_AUTOCHECKPOINT_PAGES: &str = "40000";

/// Where SQLite keeps its temporary files (statement journals, sorts and indexes that
/// outgrow their memory): in memory.
///
/// With files, the connection that wrote a bulk action's batches created, wrote and
/// unlinked a temporary file about once per commit: a statement that changes many pages
/// inside a larger transaction (a batch's insert of its watches) keeps a statement journal,
/// which SQLite spills to a file past 64 KiB. In memory a bulk Watch ran about a sixth
/// faster alone and under load, for about 30 MiB more at the peak (ADR 0047).
const SQLITE_TEMP_STORE: &str = "memory";

/// Whether a pooled SQLite connection is pinged before it is handed out: no.
///
/// sqlx's SQLite ping only asks the connection's thread to answer; it touches no database
/// (a file does not drop connections the way a server or a firewall does). Yet every
/// acquire (each claim, completion, checkpoint and enqueue) paid a round trip to that
/// thread for it, dear when the thread has to be woken on another core, so without it an
/// idle node's claim begins sooner and a drain of small claims runs faster (ADR 0010). A
/// connection whose thread had died (a panic inside sqlx) would fail its statements instead
/// of being replaced. PostgreSQL keeps the ping: it is what replaces a connection that a
/// server restart broke.
const SQLITE_PING_BEFORE_ACQUIRE: bool = false;

/// Pooled connections are never retired by age or idleness: sqlx's reaper, the task that
/// would retire them, can wrap its idle count below zero and then spin on a core forever,
/// hanging the process's shutdown (sqlx issue 3645, unfixed in 0.9.0; ADR 0039). Without
/// an idle timeout or a lifetime, sqlx starts no reaper.
fn without_reaper<DB: sea_orm::sqlx::Database>(
    pool: sea_orm::sqlx::pool::PoolOptions<DB>,
) -> sea_orm::sqlx::pool::PoolOptions<DB> {
    pool.idle_timeout(None).max_lifetime(None)
}

/// The page cache of the connection that runs a SQLite store's write transactions, in KiB
/// (SQLite's default, which the pooled connections keep, is 2,000).
///
/// A batch reads the rows it changes by id and inserts into several indexes: with the
/// b-trees' upper levels cached, each row costs about its leaf pages alone. The memory is
/// taken as pages are used, once per process.
const SQLITE_WRITER_CACHE_KIB: u32 = 16_384;

/// A pool of one connection to `db`'s SQLite database, with `db`'s settings and a larger
/// page cache, for a store's write transactions ([`crate::Store::begin_write_as`]).
///
/// A connection in WAL mode drops its whole page cache whenever another connection has
/// written. While a store's writes went to whichever pooled connection was free, every
/// batch found its connection's cache dropped by the claims, completions and people's
/// writes since its last turn, and read again the upper pages of every b-tree it touched.
/// One connection doing all of a store's writing keeps them. The pool opens its connection
/// on first use and never retires it.
pub(crate) fn sqlite_writer(db: &DatabaseConnection) -> DatabaseConnection {
    let options = (*db.get_sqlite_connection_pool().connect_options())
        .clone()
        .pragma("cache_size", format!("-{SQLITE_WRITER_CACHE_KIB}"))
        // Named, so `top -H` and `/proc/<pid>/task` tell it from the pooled connections.
        .thread_name(|_| "bulkq-sqlite-writer".to_owned());
    let pool = without_reaper(SqlitePoolOptions::new())
        .max_connections(1)
        .min_connections(0)
        .acquire_timeout(SQLITE_BUSY_TIMEOUT)
        .test_before_acquire(SQLITE_PING_BEFORE_ACQUIRE)
        .connect_lazy_with(options);
    SqlxSqliteConnector::from_sqlx_sqlite_pool(pool)
}

/// Run by every new PostgreSQL connection before the pool hands it out: a claim of no tasks.
///
/// A connection's first claim is several times slower than its later ones (the claim
/// function is compiled and the tables' catalog entries are loaded once per connection),
/// and an idle node's statements go round its pooled connections, so the first few tasks
/// after a node started each waited for one such claim, enough to set the latency's tail
/// (ADR 0008). Paid here, the cost falls on opening the connection. A claim of none
/// changes no row. A database without the queue's schema yet (the connection that migrates
/// it) has no claim function to warm.
///
/// Only a speed-up: a warm-up that fails leaves the connection as it would be without one,
/// so the failure is logged and the connection handed out.
const POSTGRES_WARM_UP: &str = "DO $$ BEGIN \
     IF to_regproc('queue_claim') IS NOT NULL THEN \
         PERFORM 1 FROM queue_claim(now(), '', 0); \
     END IF; \
     END $$";

/// The backend a database URL names: PostgreSQL for `postgres://…` (and `postgresql://…`),
/// else SQLite.
pub fn backend_of(url: &str) -> DbBackend {
    match url.starts_with("postgres") {
        true => DbBackend::Postgres,
        false => DbBackend::Sqlite,
    }
}

/// Opens a pool of `max_connections` for `url` (`sqlite://…` or `postgres://…`), with no
/// statement limit and the node checkpointing a SQLite WAL.
pub async fn connect(url: &str, max_connections: u32) -> Result<DatabaseConnection, DbErr> {
    connect_with(url, &PoolSettings::new(max_connections)).await
}

/// Opens a pool for `url` as `settings` say.
pub async fn connect_with(url: &str, settings: &PoolSettings) -> Result<DatabaseConnection, DbErr> {
    Database::connect(pool_options(url, settings)).await
}

/// How a pool is opened beyond its URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// The longest one statement may run before the database stops it, or none. For the
    /// pool serving people's requests, whose answer is given up after that long anyway: the
    /// database stops the work and the connection is free for the next request, where a
    /// statement abandoned by its request used to run on and hold it. PostgreSQL's
    /// `statement_timeout`; on SQLite a progress handler ([`sqlite_statement_limit`]).
    pub statement_limit: Option<Duration>,
    /// Who copies a SQLite WAL back into the database file.
    pub wal_checkpoints: WalCheckpoints,
}

impl PoolSettings {
    /// `max_connections`, no statement limit, checkpoints by the node.
    pub fn new(max_connections: u32) -> Self {
        Self {
            max_connections,
            statement_limit: None,
            wal_checkpoints: WalCheckpoints::Node,
        }
    }
}

/// Who copies a SQLite database's WAL back into its file (PostgreSQL ignores it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WalCheckpoints {
    /// The node: its connections at the `wal_autocheckpoint` mark, and its runtime every
    /// half second (`Store::checkpoint_wal`).
    #[default]
    Node,
    /// An external replicator that ships the WAL (Litestream): its advice is that the
    /// application never checkpoints, lest a checkpoint copy and restart the WAL between
    /// two of its reads. Connections open with `wal_autocheckpoint = 0` and the runtime,
    /// finding that, runs no checkpoints; the replicator must then run them, or the WAL
    /// grows without end.
    Replicator,
}

impl WalCheckpoints {
    /// The names `FromStr` takes.
    pub const NAMES: [&str; 2] = ["node", "replicator"];
}

impl std::str::FromStr for WalCheckpoints {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "node" => Ok(Self::Node),
            "replicator" => Ok(Self::Replicator),
            other => Err(format!(
                "unknown checkpointer {other:?}: expected one of {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

/// How every pool of the product is set up.
fn pool_options(url: &str, settings: &PoolSettings) -> ConnectOptions {
    let autocheckpoint = match settings.wal_checkpoints {
        WalCheckpoints::Node => SQLITE_WAL_AUTOCHECKPOINT_PAGES,
        WalCheckpoints::Replicator => "0",
    };
    let statement_limit = settings.statement_limit;
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(settings.max_connections)
        .min_connections(1)
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(30))
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(move |opts| {
            opts.journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true)
                .statement_cache_capacity(STATEMENT_CACHE)
                .pragma("wal_autocheckpoint", autocheckpoint)
                .pragma("temp_store", SQLITE_TEMP_STORE)
        })
        .map_sqlx_sqlite_pool_opts(move |pool| {
            let pool = without_reaper(pool).test_before_acquire(SQLITE_PING_BEFORE_ACQUIRE);
            match statement_limit {
                Some(limit) => pool.after_connect(move |connection, _| {
                    Box::pin(sqlite_statement_limit::install(connection, limit))
                }),
                None => pool,
            }
        })
        .map_sqlx_postgres_pool_opts(|pool| {
            without_reaper(pool).after_connect(|connection, _| {
                Box::pin(async move {
                    if let Err(error) =
                        sea_orm::sqlx::Executor::execute(connection, POSTGRES_WARM_UP).await
                    {
                        tracing::warn!(%error, "warming the claim on a new connection failed");
                    }
                    Ok(())
                })
            })
        });
    if let Some(limit) = statement_limit {
        let limit = format!("{}ms", limit.as_millis().max(1));
        options.map_sqlx_postgres_opts(move |opts| {
            opts.options([("statement_timeout", limit.clone())])
        });
    }
    options
}

/// Applies `M`'s pending migrations over a connection of their own, closed before this
/// returns; open the serving pool afterwards.
///
/// A migration that drops and re-creates a SQLite virtual table (the FTS5 search table)
/// leaves any pooled connection opened before it with the old table's definition: searches
/// on such a connection fail ("phrase queries are not supported") until it is recycled. So
/// no connection that outlives the migrations may exist while they run.
///
/// Any number of processes may call this at once (a cluster's nodes starting together): they
/// take turns under a lock, and each finds what the ones before it applied. Without it,
/// two nodes starting on a fresh PostgreSQL database both created the same tables and one
/// exited with a duplicate-key error from the catalog.
/// - PostgreSQL: a session advisory lock, held on a connection of its own (closing it
///   releases the lock, however the migration ended).
/// - SQLite: an exclusive lock on a file beside the database (`<file>.migrate-lock`). The
///   database's own write lock cannot serve: the migrations commit several transactions
///   of their own, each needing that lock.
pub async fn migrate<M: MigratorTrait>(url: &str) -> Result<(), DbErr> {
    let lock = MigrationLock::acquire(url).await?;
    let applied = apply::<M>(url).await;
    lock.release().await;
    applied
}

async fn apply<M: MigratorTrait>(url: &str) -> Result<(), DbErr> {
    let db = connect(url, 1).await?;
    let applied = M::up(&db, None).await;
    db.close().await?;
    applied
}

/// The key of the PostgreSQL advisory lock taken while migrating ("bulkq mg" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x6275_6c6b_7120_6d67;

/// The lock [`migrate`] holds until [`MigrationLock::release`].
enum MigrationLock {
    /// The connection holding the advisory lock.
    Postgres(DatabaseConnection),
    /// The locked file, held until dropped (none for an in-memory database, which no other
    /// process can open).
    Sqlite { _file: Option<std::fs::File> },
}

impl MigrationLock {
    async fn acquire(url: &str) -> Result<Self, DbErr> {
        if backend_of(url) == DbBackend::Postgres {
            let conn = connect(url, 1).await?;
            conn.execute_unprepared(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))
                .await?;
            return Ok(Self::Postgres(conn));
        }
        let Some(path) = sqlite_file(url) else {
            return Ok(Self::Sqlite { _file: None });
        };
        let lock_path = format!("{}.migrate-lock", path.display());
        let file = tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| DbErr::Custom(format!("taking the migration lock: {e}")))?
        .map_err(|e| DbErr::Custom(format!("taking the migration lock: {e}")))?;
        Ok(Self::Sqlite { _file: Some(file) })
    }

    /// Lets the next process migrate: a closed session releases its advisory lock, a
    /// closed file its lock.
    async fn release(self) {
        if let Self::Postgres(conn) = self
            && let Err(error) = conn.close().await
        {
            tracing::warn!(%error, "closing the migration lock's connection");
        }
    }
}

/// The file of a `sqlite:` URL, or `None` for an in-memory database.
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or(url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| path.into())
}

/// Begins a write transaction that takes SQLite's write lock at `BEGIN` (`IMMEDIATE`),
/// waiting for it as long as the busy timeout allows. A deferred transaction upgrades at
/// its first write instead, and if another connection committed in between SQLite answers
/// `SQLITE_BUSY_SNAPSHOT` at once, without waiting. PostgreSQL ignores the option.
pub async fn begin_immediate(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    db.begin_with_options(TransactionOptions {
        // No access mode: read-write is the default, and SeaORM warns on every SQLite
        // transaction that sets one.
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::sqlite_file;

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(
            sqlite_file("sqlite://data/bulkq.db?mode=rwc"),
            Some("data/bulkq.db".into())
        );
        assert_eq!(sqlite_file("sqlite:/tmp/x.db"), Some("/tmp/x.db".into()));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://localhost/x"), None);
    }
}
