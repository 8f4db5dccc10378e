//! The dashboard's bell: the latest ends of a user's tasks, and how many came after they
//! last opened it (`staff_user.notices_seen_at`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use queue::{Store, Task};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::store::users;

/// How far back the bell looks: about as long as finished tasks are kept.
pub const LOOKBACK: Duration = Duration::from_secs(7 * 24 * 3600);
/// Ends listed when the bell opens.
pub const LISTED: usize = 10;
/// Unread ends counted; beyond this the bell says "99+".
pub const COUNTED: u64 = 99;

/// What the bell shows.
#[derive(Debug, Clone)]
pub struct Bell {
    /// Ends since the user last opened the bell, up to [`COUNTED`].
    pub unread: u64,
    /// More than [`COUNTED`] are unread.
    pub more: bool,
    /// The latest [`LISTED`] ends, the latest first.
    pub ended: Vec<Task>,
}

/// The bell of user `user_id`.
pub async fn bell<C: ConnectionTrait>(
    db: &C,
    store: &Store,
    user_id: Uuid,
) -> Result<Bell, CaseloadError> {
    let now = store.clock().now();
    let since = now - chrono::Duration::from_std(LOOKBACK).unwrap_or_default();
    let seen = users::find(db, user_id)
        .await?
        .and_then(|user| user.notices_seen_at);
    let mut ended = store.tasks_ended_of(user_id, since, COUNTED + 1).await?;
    let unread = ended
        .iter()
        .filter(|task| is_after(task.workflow_stopped_date, seen))
        .count() as u64;
    ended.truncate(LISTED);
    Ok(Bell {
        unread: unread.min(COUNTED),
        more: unread > COUNTED,
        ended,
    })
}

/// Marks every end up to `at` read for user `user_id`; never moves back (two tabs).
pub async fn mark_seen<C: ConnectionTrait>(
    db: &C,
    user_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    users::raise_notices_seen(db, user_id, at).await
}

fn is_after(end: Option<DateTime<Utc>>, seen: Option<DateTime<Utc>>) -> bool {
    match (end, seen) {
        (Some(end), Some(seen)) => end > seen,
        (Some(_), None) => true,
        (None, _) => false,
    }
}
