//! The audit trail for admins: a page of it as the Audit page's filters ask. The CSV of the
//! same filters is streamed by the server (`/admin/audit.csv`).

use bulkq_types::audit::{AuditPage, AuditQuery};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::error::AppError;

/// Where the CSV of a query's entries downloads from.
pub const AUDIT_CSV_PATH: &str = "/admin/audit.csv";

/// A page of the trail, newest first (admins).
#[server(endpoint = "audit_page", input = Json)]
pub async fn list_audit(query: AuditQuery) -> Result<AuditPage, AppError> {
    use crate::api::ssr::{require_admin, respond, state};
    respond(async move {
        require_admin().await?;
        let search = query.check().map_err(AppError::invalid_fields)?;
        Ok(caseload::audit::page(&state()?.db, &search).await?)
    })
    .await
}
