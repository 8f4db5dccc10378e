//! Submitting a bulk action: validate the request and enqueue its task in one transaction,
//! for the JSON API and the dashboard alike.

use queue::{QueueError, Store, Task};

use super::spec::{
    EmailRequest, ExportRequest, StatusChangeRequest, SubmitError, WatchRequest, email_task,
    export_task, status_change_task, unwatch_task, watch_task,
};
use crate::users::StaffUser;

/// A request for one of the bulk actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionRequest {
    Export(ExportRequest),
    ProgramStatusChange(StatusChangeRequest),
    Watch(WatchRequest),
    Unwatch(WatchRequest),
    Email(EmailRequest),
}

/// Validates `request` and enqueues its task, owned by and run as `user`; `max_row_cap` is
/// the node's export limit. The task is committed (and the workers woken) when this
/// returns, or nothing is.
pub async fn submit(
    store: &Store,
    user: &StaffUser,
    request: ActionRequest,
    max_row_cap: u64,
) -> Result<Task, SubmitError> {
    let mut txn = store.begin_queue().await?;
    let task = match request {
        ActionRequest::Export(request) => export_task(user, request, max_row_cap)?,
        ActionRequest::ProgramStatusChange(request) => {
            status_change_task(&*txn, user, request).await?
        }
        ActionRequest::Watch(request) => watch_task(user, request)?,
        ActionRequest::Unwatch(request) => unwatch_task(user, request)?,
        ActionRequest::Email(request) => email_task(user, request)?,
    };
    let row = txn.enqueue(task).await?;
    txn.commit().await?;
    Ok(row)
}

impl From<QueueError> for SubmitError {
    fn from(error: QueueError) -> Self {
        SubmitError::Queue(error)
    }
}
