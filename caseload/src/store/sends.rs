//! What the three send logs (`email_send_log`, `coach_notice`, `task_notice`) share in SQL.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, IntoColumnRef, SimpleExpr};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter};

use super::entity::{coach_notice, email_send_log, task_notice};
use crate::CaseloadError;
use crate::email::{INTERRUPTED, MAX_SEND_ATTEMPTS, SendStatus};

/// The columns every send log has, so the statements they share are written once.
pub(super) trait SendLog: EntityTrait {
    const STATUS: Self::Column;
    const DETAIL: Self::Column;
    const UPDATED_AT: Self::Column;
}

impl SendLog for email_send_log::Entity {
    const STATUS: Self::Column = email_send_log::Column::Status;
    const DETAIL: Self::Column = email_send_log::Column::Detail;
    const UPDATED_AT: Self::Column = email_send_log::Column::UpdatedAt;
}

impl SendLog for coach_notice::Entity {
    const STATUS: Self::Column = coach_notice::Column::Status;
    const DETAIL: Self::Column = coach_notice::Column::Detail;
    const UPDATED_AT: Self::Column = coach_notice::Column::UpdatedAt;
}

impl SendLog for task_notice::Entity {
    const STATUS: Self::Column = task_notice::Column::Status;
    const DETAIL: Self::Column = task_notice::Column::Detail;
    const UPDATED_AT: Self::Column = task_notice::Column::UpdatedAt;
}

/// Marks `failed` (interrupted) the rows of log `L` that `scope` selects and are still
/// `sending`: their message may or may not have gone out, and at most once wins over at
/// least once. Returns how many.
pub(super) async fn fail_interrupted<L: SendLog, C: ConnectionTrait>(
    db: &C,
    scope: Condition,
    now: DateTime<Utc>,
) -> Result<u64, CaseloadError> {
    Ok(L::update_many()
        .col_expr(L::STATUS, Expr::value(SendStatus::Failed.as_str()))
        .col_expr(L::DETAIL, Expr::value(INTERRUPTED))
        .col_expr(L::UPDATED_AT, Expr::value(now))
        .filter(L::STATUS.eq(SendStatus::Sending.as_str()))
        .filter(scope)
        .exec(db)
        .await?
        .rows_affected)
}

/// The value to record for a message that ended in `status`, in a log whose row counts its
/// tries in `attempts`: a deferral with no tries left ([`MAX_SEND_ATTEMPTS`]) becomes a
/// failure, decided in SQL from the row's own count.
pub(super) fn recorded(status: SendStatus, attempts: impl IntoColumnRef) -> SimpleExpr {
    match status {
        SendStatus::Deferred => Expr::case(
            Expr::col(attempts).gte(MAX_SEND_ATTEMPTS),
            SendStatus::Failed.as_str(),
        )
        .finally(SendStatus::Deferred.as_str())
        .into(),
        other => Expr::value(other.as_str()),
    }
}
