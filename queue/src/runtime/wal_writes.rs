//! Writes to a SQLite database's WAL file, as the operating system reports them: the cue
//! for [`super::sqlite_watch`] to look for a commit at once instead of at its next tick.
//!
//! Linux reports them through inotify, watching the database's directory (SQLite deletes and
//! recreates the WAL file, a watch on the file itself would end with it). Elsewhere, and for
//! a database without a file, there is no cue and the watch keeps to its timer.

use std::path::Path;

/// A source of WAL-write cues; see [`wal_writes`].
pub(crate) struct WalWrites {
    #[cfg(target_os = "linux")]
    events: inotify::EventStream<[u8; 1024]>,
    #[cfg(target_os = "linux")]
    wal_name: std::ffi::OsString,
}

/// Cues for writes to the WAL file of the database at `database`, or `None` where the
/// operating system gives none (or refuses another watch; the reason is logged).
#[cfg(target_os = "linux")]
pub(crate) fn wal_writes(database: &Path) -> Option<WalWrites> {
    use inotify::{Inotify, WatchMask};

    let file_name = database.file_name().filter(|_| database.is_file())?;
    let mut wal_name = file_name.to_owned();
    wal_name.push("-wal");
    let directory = match database.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let watch = || {
        let inotify = Inotify::init()?;
        inotify.watches().add(directory, WatchMask::MODIFY)?;
        inotify.into_event_stream([0; 1024])
    };
    match watch() {
        Ok(events) => Some(WalWrites { events, wal_name }),
        Err(error) => {
            tracing::warn!(%error, "no inotify watch on the database directory; polling only");
            None
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn wal_writes(_database: &Path) -> Option<WalWrites> {
    None
}

impl WalWrites {
    /// Waits for the next write to the WAL file; never returns without a source (or once
    /// the source failed, which is logged).
    pub async fn next(writes: &mut Option<Self>) {
        #[cfg(target_os = "linux")]
        if let Some(source) = writes {
            use inotify::StreamExt;

            while let Some(event) = source.events.next().await {
                match event {
                    Ok(event) if event.name.as_deref() == Some(source.wal_name.as_os_str()) => {
                        return;
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "inotify watch failed; polling only");
                        break;
                    }
                }
            }
            *writes = None;
        }
        std::future::pending().await
    }
}
