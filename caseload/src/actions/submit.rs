//! Submitting a bulk action: validate the request and enqueue its task in one transaction,
//! for the JSON API and the dashboard alike.

use bulkq_types::requests::ActionRequest;
use chrono::{DateTime, Utc};
use queue::{NewTask, QueueError, Store, Task, WriteClass};

use super::idempotency::IdempotencyKey;
use super::kinds::{NodeLimits, task_for};
use super::spec::SubmitError;
use crate::users::StaffUser;

/// Validates `request` and enqueues its task, owned by and run as `user`, within the node's
/// `limits`. The task is committed (and the workers woken) when this returns, or nothing
/// is.
///
/// With an idempotency `key`, a request the user sent before with that key returns the task
/// it made instead of a new one (see [`super::idempotency`]).
pub async fn submit(
    store: &Store,
    user: &StaffUser,
    request: ActionRequest,
    limits: &NodeLimits,
    key: Option<&IdempotencyKey>,
) -> Result<Task, SubmitError> {
    let mut txn = store.begin_queue_as(WriteClass::Submission).await?;
    let task = task_for(&*txn, user, request, limits).await?;
    let row = match key {
        None => txn.enqueue(task).await?,
        Some(key) => {
            let task = task.with_unique_key(key.unique_key(user.id));
            let row = txn.enqueue_once(task.clone()).await?;
            if !made_by(&row, &task) {
                return Err(SubmitError::KeyReused);
            }
            row
        }
    };
    txn.commit().await?;
    Ok(row)
}

/// Whether `row` is the task `task` would have made: the same action, spec and schedule (a
/// time the request left out is the enqueue time, so any stored time matches it).
fn made_by(row: &Task, task: &NewTask) -> bool {
    let same_time =
        |asked: DateTime<Utc>| asked.timestamp_micros() == row.run_at.timestamp_micros();
    row.execution_component_name == task.component
        && row.execution_spec == task.spec
        && row.priority == task.priority
        && task.run_at.is_none_or(same_time)
}

impl From<QueueError> for SubmitError {
    fn from(error: QueueError) -> Self {
        SubmitError::Queue(error)
    }
}
