//! Starting an import: its task is enqueued and its upload marked taken by that task in one
//! transaction, so a file is imported once however often Import is pressed, and the
//! cleanup job ([`super::cleanup`]) knows which uploads a task still needs.

use bulkq_types::actions::PEOPLE_IMPORT;
use queue::{NewTask, Store, Task};
use uuid::Uuid;

use super::ImportSpec;
use crate::CaseloadError;
use crate::store::uploads;

/// Enqueues the import `spec` describes, owned by and run as the admin `admin_id`
/// (`admin_name` for the task list), and returns its task.
pub async fn start_import(
    store: &Store,
    admin_id: Uuid,
    admin_name: &str,
    spec: &ImportSpec,
) -> Result<Task, CaseloadError> {
    let json = serde_json::to_value(spec)
        .map_err(|error| CaseloadError::Invalid(format!("the import spec: {error}")))?;
    let mut txn = store.begin_queue().await?;
    let task = NewTask::new(PEOPLE_IMPORT, json, admin_id)
        .with_created_by(admin_name)
        .with_progress_total(i64::try_from(spec.rows).unwrap_or(i64::MAX));
    let task = txn.enqueue(task).await?;
    if uploads::take(&*txn, spec.upload_id, task.id).await? != 1 {
        return Err(CaseloadError::Invalid(
            "this file is being imported already, or it was discarded: upload it again".to_owned(),
        ));
    }
    txn.commit().await?;
    Ok(task)
}
