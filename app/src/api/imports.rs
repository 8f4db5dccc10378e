//! The people import on the dashboard (admins): what importing an uploaded file would do,
//! starting it, and discarding a file not to import. The file itself arrives by a form
//! upload and its error report leaves as a download, both plain HTTP (`server::imports`).

use bulkq_types::people_import::{ColumnMapping, ImportPreview};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// An uploaded file and, until an import takes it, what importing it would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportDraft {
    pub upload_id: Uuid,
    pub file_name: String,
    pub byte_size: u64,
    /// The task importing the file, once started.
    pub task_id: Option<Uuid>,
    /// The preview with the mapping asked for (or the header's), until the file is taken.
    pub preview: Option<ImportPreview>,
}

/// Reads the upload through with `mapping` (the header's guess if `None`); changes nothing.
#[server(endpoint = "imports/preview", input = Json)]
pub async fn preview_import(
    upload_id: Uuid,
    mapping: Option<ColumnMapping>,
    full_sync: bool,
) -> Result<ImportDraft, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::draft(upload_id, mapping, full_sync)).await
}

/// Starts importing the upload with `mapping`; returns the import task's id.
#[server(endpoint = "imports/start", input = Json)]
pub async fn start_people_import(
    upload_id: Uuid,
    mapping: ColumnMapping,
    full_sync: bool,
) -> Result<Uuid, AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::start(upload_id, mapping, full_sync)).await
}

/// Deletes an upload no import has taken.
#[server(endpoint = "imports/discard", input = Json)]
pub async fn discard_import(upload_id: Uuid) -> Result<(), AppError> {
    use crate::api::ssr::respond;
    respond(ssr_impl::discard(upload_id)).await
}

#[cfg(feature = "ssr")]
mod ssr_impl {
    use caseload::people_import::preview::preview;
    use caseload::people_import::start::start_import;
    use caseload::people_import::upload::{Upload, delete_upload, find_upload};
    use caseload::people_import::{ImportSpec, count_rows, read_head};

    use super::*;
    use crate::api::ssr::{actor, request_client, require_admin, state};

    /// The finished upload `upload_id`, or a 404.
    async fn finished_upload(upload_id: Uuid) -> Result<Upload, AppError> {
        find_upload(&state()?.db, upload_id)
            .await?
            .filter(|upload| upload.finished)
            .ok_or_else(|| AppError::NotFound("Upload".into()))
    }

    pub async fn draft(
        upload_id: Uuid,
        mapping: Option<ColumnMapping>,
        full_sync: bool,
    ) -> Result<ImportDraft, AppError> {
        require_admin().await?;
        let upload = finished_upload(upload_id).await?;
        let preview = match upload.task_id {
            Some(_) => None,
            None => Some(preview(&state()?.db, &upload, mapping, full_sync).await?),
        };
        Ok(ImportDraft {
            upload_id,
            byte_size: upload.size(),
            file_name: upload.file_name,
            task_id: upload.task_id,
            preview,
        })
    }

    pub async fn start(
        upload_id: Uuid,
        mapping: ColumnMapping,
        full_sync: bool,
    ) -> Result<Uuid, AppError> {
        let admin = require_admin().await?;
        let app = state()?;
        let upload = finished_upload(upload_id).await?;
        // The spec's first row and row count come from the file, not from the browser:
        // counted without the preview's lookups, so a large file starts at once.
        let head = read_head(&app.db, &upload).await?;
        let problems = mapping.problems(head.header.len());
        if !problems.is_empty() {
            let problems = problems.into_iter().map(|(f, p)| (f.to_owned(), p));
            return Err(AppError::invalid_fields(problems));
        }
        let rows = count_rows(&app.db, &upload, head.first_row).await?;
        let spec = ImportSpec::new(&upload, mapping, head.first_row, rows, full_sync);
        let by = actor(&admin, request_client());
        let task = start_import(&app.store, &by, &spec).await?;
        tracing::info!(admin = %admin.username, task = %task.id, file = %upload.file_name,
            "people import started");
        Ok(task.id)
    }

    pub async fn discard(upload_id: Uuid) -> Result<(), AppError> {
        require_admin().await?;
        let upload = finished_upload(upload_id).await?;
        if upload.task_id.is_some() {
            return Err(AppError::Conflict(
                "This file is being imported; cancel its task instead.".into(),
            ));
        }
        delete_upload(&state()?.db, upload_id).await?;
        Ok(())
    }
}
