//! What the three send logs (`email_send_log`, `coach_notice`, `task_notice`) share in SQL.

use sea_orm::sea_query::{Expr, ExprTrait, IntoColumnRef, SimpleExpr};

use crate::email::{MAX_SEND_ATTEMPTS, SendStatus};

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
