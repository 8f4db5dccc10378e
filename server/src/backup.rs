//! `bulkq backup --to FILE`: a consistent copy of the SQLite database, taken while nodes
//! work on it.
//!
//! `VACUUM INTO` writes the database as one read transaction sees it, so the copy holds
//! every transaction committed before it began and none after: a bulk action's batch is
//! in it with its checkpoint or not at all, and a node started on the copy carries on
//! from there, rescuing what the copy shows as running. Writers go on meanwhile (WAL
//! readers block nobody). The copy is written beside the target, synced and then renamed,
//! so a backup cut short leaves no file that looks whole.
//!
//! PostgreSQL has its own tools for this; the command prints the `pg_dump` to run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use sea_orm::{ConnectionTrait, DbBackend, Statement};

use crate::commands::{redact, sqlite_file};
use crate::config::BackupArgs;

/// `backup`.
pub async fn backup(database_url: &str, args: BackupArgs) -> anyhow::Result<()> {
    if queue::database::backend_of(database_url) == DbBackend::Postgres {
        bail!(
            "a PostgreSQL database is backed up with PostgreSQL's own tools, for example:\n  \
             pg_dump --format=custom --file {} '{}'",
            args.to.display(),
            redact(database_url)
        );
    }
    let Some(source) = sqlite_file(database_url).filter(|path| path.is_file()) else {
        bail!("no SQLite database file at {}", redact(database_url));
    };
    if args.to.exists() {
        bail!(
            "{} exists already: back up to a new file",
            args.to.display()
        );
    }
    let partial = partial_path(&args.to);
    remove_if_present(&partial)?;
    let started = Instant::now();
    // One connection, and no migration: a backup copies the database as it is.
    let db = queue::database::connect(database_url, 1)
        .await
        .with_context(|| format!("opening {}", source.display()))?;
    let copy = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "VACUUM INTO ?",
        [partial.display().to_string().into()],
    );
    let copied = db.execute_raw(copy).await;
    let _ = db.close().await;
    if let Err(error) = copied {
        remove_if_present(&partial)?;
        return Err(error).context("copying the database");
    }
    make_durable(&partial, &args.to)?;
    let bytes = std::fs::metadata(&args.to)?.len();
    println!(
        "Backed up {} to {} ({:.1} MB) in {:.1} s.",
        source.display(),
        args.to.display(),
        bytes as f64 / 1_000_000.0,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Where the copy is written before it is complete.
fn partial_path(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Syncs the finished copy, renames it to its name and syncs the directory, so after a
/// power cut either the whole copy is there or no file of that name.
fn make_durable(partial: &Path, target: &Path) -> anyhow::Result<()> {
    std::fs::File::open(partial)
        .and_then(|file| file.sync_all())
        .with_context(|| format!("syncing {}", partial.display()))?;
    std::fs::rename(partial, target)
        .with_context(|| format!("naming the copy {}", target.display()))?;
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::File::open(directory)
        .and_then(|directory| directory.sync_all())
        .with_context(|| format!("syncing {}", directory.display()))
}
