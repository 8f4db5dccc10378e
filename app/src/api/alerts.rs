//! Early alerts outside the bulk action that raises them: a person's alerts, closing one,
//! and the reasons admins manage. The JSON API (`server::api::alerts`) calls the same
//! [`ssr_impl`] functions with its own caller.

use bulkq_types::alerts::{AlertReason, EarlyAlert};
use leptos::prelude::*;
use uuid::Uuid;

use crate::error::AppError;

/// The reasons an alert may give, in pick-list order; retired ones too if `with_retired`.
#[server(endpoint = "alert-reasons")]
pub async fn alert_reasons(with_retired: bool) -> Result<Vec<AlertReason>, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    respond(async {
        require_user().await?;
        ssr_impl::reasons(&state()?, with_retired).await
    })
    .await
}

/// Every reason, retired ones too (admins, for the page that manages them).
#[server(endpoint = "alert-reasons/managed")]
pub async fn managed_alert_reasons() -> Result<Vec<AlertReason>, AppError> {
    use crate::api::ssr::{require_admin, respond, state};
    respond(async {
        require_admin().await?;
        ssr_impl::reasons(&state()?, true).await
    })
    .await
}

/// A person's alerts, open ones first.
#[server(endpoint = "person-alerts")]
pub async fn person_alerts(person_id: Uuid) -> Result<Vec<EarlyAlert>, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    respond(async {
        require_user().await?;
        ssr_impl::alerts_of(&state()?, person_id).await
    })
    .await
}

/// Closes an open alert of a person the user may act on.
#[server(endpoint = "alerts/close")]
pub async fn close_alert(alert_id: Uuid) -> Result<EarlyAlert, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    respond(async { ssr_impl::close(&state()?, &require_user().await?, alert_id).await }).await
}

/// Adds a reason (admins).
#[server(endpoint = "alert-reasons/add")]
pub async fn add_alert_reason(name: String) -> Result<AlertReason, AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async {
        let user = require_user().await?;
        ssr_impl::add_reason(&state()?, user, request_client(), &name).await
    })
    .await
}

/// Retires a reason (admins): no new alert may give it.
#[server(endpoint = "alert-reasons/retire")]
pub async fn retire_alert_reason(code: String) -> Result<(), AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async {
        let user = require_user().await?;
        ssr_impl::retire_reason(&state()?, user, request_client(), &code).await
    })
    .await
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use caseload::access::Actor;
    use caseload::early_alerts;
    use caseload::users::StaffUser;
    use queue::{WriteClass, WriteTransaction};

    use super::*;
    use crate::api::admin::ssr_impl::admin_only;
    use crate::api::login_throttle::ClientAddress;
    use crate::api::ssr::{AppState, actor as audit_actor, internal};
    use bulkq_types::audit::AuditAct;
    use caseload::audit::record;

    async fn begin(state: &AppState) -> Result<WriteTransaction, AppError> {
        state
            .store
            .begin_write_as(WriteClass::Interactive)
            .await
            .map_err(internal)
    }

    fn not_found(error: caseload::CaseloadError, what: &str) -> AppError {
        match error {
            caseload::CaseloadError::NotFound => AppError::NotFound(what.into()),
            other => other.into(),
        }
    }

    pub async fn reasons(
        state: &AppState,
        with_retired: bool,
    ) -> Result<Vec<AlertReason>, AppError> {
        Ok(early_alerts::reasons(&state.db, with_retired).await?)
    }

    pub async fn alerts_of(state: &AppState, person_id: Uuid) -> Result<Vec<EarlyAlert>, AppError> {
        Ok(early_alerts::alerts_of(&state.db, person_id).await?)
    }

    pub async fn close(
        state: &AppState,
        user: &StaffUser,
        alert_id: Uuid,
    ) -> Result<EarlyAlert, AppError> {
        let txn = begin(state).await?;
        let actor = Actor::load(&*txn, user.id).await?;
        let now = state.store.clock().now();
        let alert = early_alerts::close(&*txn, &actor, alert_id, now)
            .await
            .map_err(|error| not_found(error, "Alert"))?;
        txn.commit().await.map_err(internal)?;
        Ok(alert)
    }

    pub async fn add_reason(
        state: &AppState,
        user: StaffUser,
        client: ClientAddress,
        name: &str,
    ) -> Result<AlertReason, AppError> {
        let admin = admin_only(user)?;
        let txn = begin(state).await?;
        let reason = early_alerts::add_reason(&*txn, name).await?;
        let by = audit_actor(&admin, client);
        let target = format!("{} ({})", reason.name, reason.code);
        record(&*txn, &by, AuditAct::AlertReasonAdd, &[target], "").await?;
        txn.commit().await.map_err(internal)?;
        tracing::info!(admin = %admin.username, reason = %reason.code, "added an alert reason");
        Ok(reason)
    }

    pub async fn retire_reason(
        state: &AppState,
        user: StaffUser,
        client: ClientAddress,
        code: &str,
    ) -> Result<(), AppError> {
        let admin = admin_only(user)?;
        if !bulkq_types::alerts::is_reason_code(code) {
            return Err(AppError::NotFound("Reason in use".into()));
        }
        let txn = begin(state).await?;
        let now = state.store.clock().now();
        early_alerts::retire_reason(&*txn, code, now)
            .await
            .map_err(|error| not_found(error, "Reason in use"))?;
        let by = audit_actor(&admin, client);
        record(&*txn, &by, AuditAct::AlertReasonRetire, &[code], "").await?;
        txn.commit().await.map_err(internal)?;
        tracing::info!(admin = %admin.username, reason = %code, "retired an alert reason");
        Ok(())
    }
}
