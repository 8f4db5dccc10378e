//! The `send_rate` rows: a token bucket read and written under a row lock (PostgreSQL) or
//! the one writer (SQLite), so nodes drawing at once never take the same token.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveModelTrait, ConnectionTrait, EntityTrait, IntoActiveModel, QuerySelect, Set};

use super::entity::send_rate::{self, Column};
use crate::CaseloadError;

/// Takes up to `want` whole tokens from bucket `name`, topped up at `per_second` since it
/// was last drawn from and holding at most `capacity`; returns how many were taken and how
/// many (fractional) are left. A new bucket starts full.
pub(crate) async fn take<C: ConnectionTrait>(
    db: &C,
    name: &str,
    (per_second, capacity): (f64, f64),
    want: f64,
    now: DateTime<Utc>,
) -> Result<(f64, f64), CaseloadError> {
    let full = send_rate::ActiveModel {
        name: Set(name.to_owned()),
        tokens: Set(capacity),
        refilled_at: Set(now),
    };
    send_rate::Entity::insert(full)
        .on_conflict(OnConflict::column(Column::Name).do_nothing().to_owned())
        .exec_without_returning(db)
        .await?;
    let row = send_rate::Entity::find_by_id(name.to_owned())
        .lock_exclusive()
        .one(db)
        .await?
        .ok_or_else(|| CaseloadError::Invalid(format!("no send rate is called {name:?}")))?;
    // A node whose clock is behind another's tops up nothing rather than going back.
    let elapsed = (now - row.refilled_at)
        .num_microseconds()
        .unwrap_or(0)
        .max(0) as f64
        / 1e6;
    let tokens = (row.tokens + elapsed * per_second).min(capacity);
    let taken = want.min(tokens.floor()).max(0.0);
    let refilled_at = now.max(row.refilled_at);
    let mut row = row.into_active_model();
    row.tokens = Set(tokens - taken);
    row.refilled_at = Set(refilled_at);
    row.update(db).await?;
    Ok((taken, tokens - taken))
}
