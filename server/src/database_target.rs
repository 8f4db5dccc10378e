//! The database every command works on, as the global options name it: its URL, and who
//! checkpoints its WAL when it is a SQLite file (which every process opening it must agree
//! on, so it is a global option and not `serve`'s alone).

use anyhow::Context;
use migration::Migrator;
use queue::database::{PoolSettings, WalCheckpoints};
use sea_orm::DatabaseConnection;

use crate::commands::{redact, sqlite_directory};

/// A database URL and how its pools are opened.
#[derive(Clone, Debug)]
pub struct DatabaseTarget {
    pub url: String,
    pub wal_checkpoints: WalCheckpoints,
}

impl DatabaseTarget {
    /// `url`, its WAL checkpointed by the node.
    pub fn at(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            wal_checkpoints: WalCheckpoints::Node,
        }
    }

    /// The settings of a pool of `max_connections`.
    pub fn pool(&self, max_connections: u32) -> PoolSettings {
        PoolSettings {
            wal_checkpoints: self.wal_checkpoints,
            ..PoolSettings::new(max_connections)
        }
    }

    /// Opens the database (creating a SQLite file's directory if needed), brings its schema
    /// up to date, and returns a pool of `max_connections`.
    pub async fn open(&self, max_connections: u32) -> anyhow::Result<DatabaseConnection> {
        self.open_with(&self.pool(max_connections)).await
    }

    /// [`Self::open`] with a pool of `settings`.
    pub async fn open_with(&self, settings: &PoolSettings) -> anyhow::Result<DatabaseConnection> {
        self.migrate().await?;
        self.connect(settings).await
    }

    /// Brings the schema up to date on a connection of its own (see
    /// `queue::database::migrate`), creating a SQLite file's directory if needed.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        if let Some(dir) = sqlite_directory(&self.url) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the database directory {}", dir.display()))?;
        }
        queue::database::migrate::<Migrator>(&self.url)
            .await
            .with_context(|| format!("migrating the database {}", redact(&self.url)))
    }

    /// A pool of `settings` on the database as it is.
    pub async fn connect(&self, settings: &PoolSettings) -> anyhow::Result<DatabaseConnection> {
        queue::database::connect_with(&self.url, settings)
            .await
            .with_context(|| format!("opening the database {}", redact(&self.url)))
    }
}
