//! Starting an import: its task is enqueued and its upload marked taken by that task in one
//! transaction, so a file is imported once however often Import is pressed, and the
//! cleanup job ([`super::cleanup`]) knows which uploads a task still needs.

use bulkq_types::actions::PEOPLE_IMPORT;
use queue::{NewTask, Store, Task, WriteClass};

use bulkq_types::audit::AuditAct;

use super::ImportSpec;
use crate::CaseloadError;
use crate::audit::{self, Actor};
use crate::store::uploads;

/// Enqueues the import `spec` describes, owned by and run as the admin `by`, and returns
/// its task; the audit trail records the start in the same transaction.
pub async fn start_import(
    store: &Store,
    by: &Actor,
    spec: &ImportSpec,
) -> Result<Task, CaseloadError> {
    let owner = by
        .id
        .ok_or_else(|| CaseloadError::Invalid("an import runs as a staff user".to_owned()))?;
    let json = serde_json::to_value(spec)
        .map_err(|error| CaseloadError::Invalid(format!("the import spec: {error}")))?;
    let mut txn = store.begin_queue_as(WriteClass::Submission).await?;
    let task = NewTask::new(PEOPLE_IMPORT, json, owner)
        .with_created_by(&by.name)
        .with_progress_total(i64::try_from(spec.rows).unwrap_or(i64::MAX));
    let task = txn.enqueue(task).await?;
    if uploads::take(&*txn, spec.upload_id, task.id).await? != 1 {
        return Err(CaseloadError::Invalid(
            "this file is being imported already, or it was discarded: upload it again".to_owned(),
        ));
    }
    let mode = if spec.full_sync {
        "full sync"
    } else {
        "add and change"
    };
    let target = format!("{} (task {})", spec.file_name, task.id);
    let detail = format!("{} rows, {mode}", spec.rows);
    audit::record(&*txn, by, AuditAct::PeopleImport, &[target], detail).await?;
    txn.commit().await?;
    Ok(task)
}
