//! The bulk actions, one module each behind one trait ([`BulkAction`]): what its request may
//! ask and the spec its task stores, how the task reads in one line, and the executor that
//! runs it. [`task_for`] and [`for_action`] below are the only places that list them, so an
//! action is added with its module and one line in each (ARCHITECTURE.md, "Adding a bulk
//! action"); every other difference between actions is asked of `ActionKind`.

mod coach_reassignment;
mod early_alert;
mod email;
mod export;
mod status_change;
mod unwatch;
mod watch;

use std::future::Future;

use bulkq_types::actions::ActionKind;
use bulkq_types::requests::{ActionRequest, ScheduleRequest};
use queue::{NewTask, Registry, Task, TaskExecutor};
use sea_orm::ConnectionTrait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use coach_reassignment::CoachReassignmentSpec;
pub use email::{EMAIL_BATCH_MAX, EMAIL_SENDS_IN_FLIGHT, EmailSpec};
pub use export::ExportSpec;
pub use status_change::StatusChangeSpec;
pub use watch::WatchSpec;

use super::ActionsConfig;
use super::pace::SharedPace;
use super::spec::{SubmitError, new_task};
use super::summary::{StatusNames, describe_target};
use super::target::Target;
use crate::users::StaffUser;

/// What a node allows every request, whatever it asks.
#[derive(Debug, Clone, Copy)]
pub struct NodeLimits {
    /// The most rows one export may have (`--export-row-cap`).
    pub export_row_cap: u64,
}

/// One bulk action.
pub(crate) trait BulkAction {
    /// Which action it is.
    const KIND: ActionKind;
    /// What the JSON API and the dashboard send (a `bulkq-types` request).
    type Request;
    /// What its task stores (`execution_spec`): the request checked, its target resolved.
    type Spec: Serialize + DeserializeOwned;

    /// Checks `request` for `user`, reporting every bad field at once (reading through `db`
    /// what must exist, such as a status); the spec and when the task is to run.
    fn check<C: ConnectionTrait>(
        db: &C,
        user: &StaffUser,
        request: Self::Request,
        limits: &NodeLimits,
    ) -> impl Future<Output = Result<(Self::Spec, ScheduleRequest), SubmitError>>;

    /// Who the task acts on.
    fn target(spec: &Self::Spec) -> &Target;

    /// The request in one line, its people described as `people`: "Watch 3 people".
    fn summary(spec: &Self::Spec, people: &str, statuses: &StatusNames) -> String;

    /// The executor of the action's tasks; `pace` sizes batches of at most so many rows.
    fn executor(
        config: &ActionsConfig,
        pace: &dyn Fn(u64) -> SharedPace,
    ) -> impl TaskExecutor + 'static;
}

/// The task `request` asks for, checked, owned by and run as `user`.
pub async fn task_for<C: ConnectionTrait>(
    db: &C,
    user: &StaffUser,
    request: ActionRequest,
    limits: &NodeLimits,
) -> Result<NewTask, SubmitError> {
    match request {
        ActionRequest::Export(request) => {
            task_of::<export::Export, C>(db, user, request, limits).await
        }
        ActionRequest::ProgramStatusChange(request) => {
            task_of::<status_change::StatusChange, C>(db, user, request, limits).await
        }
        ActionRequest::Watch(request) => {
            task_of::<watch::Watch, C>(db, user, request, limits).await
        }
        ActionRequest::Unwatch(request) => {
            task_of::<unwatch::Unwatch, C>(db, user, request, limits).await
        }
        ActionRequest::Email(request) => {
            task_of::<email::Email, C>(db, user, request, limits).await
        }
        ActionRequest::CoachReassignment(request) => {
            task_of::<coach_reassignment::CoachReassignment, C>(db, user, request, limits).await
        }
        ActionRequest::EarlyAlert(request) => {
            task_of::<early_alert::EarlyAlert, C>(db, user, request, limits).await
        }
    }
}

/// Something done with one action's module, whichever action it is.
pub(crate) trait ForAction {
    type Output;
    fn apply<A: BulkAction>(self) -> Self::Output;
}

/// Applies `what` to the module of `kind`.
pub(crate) fn for_action<F: ForAction>(kind: ActionKind, what: F) -> F::Output {
    match kind {
        ActionKind::Export => what.apply::<export::Export>(),
        ActionKind::ProgramStatusChange => what.apply::<status_change::StatusChange>(),
        ActionKind::Watch => what.apply::<watch::Watch>(),
        ActionKind::Unwatch => what.apply::<unwatch::Unwatch>(),
        ActionKind::Email => what.apply::<email::Email>(),
        ActionKind::CoachReassignment => what.apply::<coach_reassignment::CoachReassignment>(),
        ActionKind::EarlyAlert => what.apply::<early_alert::EarlyAlert>(),
    }
}

/// `A`'s task for `request`.
async fn task_of<A: BulkAction, C: ConnectionTrait>(
    db: &C,
    user: &StaffUser,
    request: A::Request,
    limits: &NodeLimits,
) -> Result<NewTask, SubmitError> {
    let (spec, schedule) = A::check(db, user, request, limits).await?;
    new_task(A::KIND, A::target(&spec), &spec, user, schedule)
}

/// The summary of a task of the action applied to ([`for_action`]); `None` if its spec no
/// longer reads.
pub(crate) struct Summarize<'a> {
    pub task: &'a Task,
    pub statuses: &'a StatusNames,
}

impl ForAction for Summarize<'_> {
    type Output = Option<String>;

    fn apply<A: BulkAction>(self) -> Option<String> {
        // Read in place: no copy of a long id list.
        let spec = <A::Spec as Deserialize>::deserialize(&self.task.execution_spec).ok()?;
        let people = describe_target(A::target(&spec), self.task, self.statuses);
        Some(A::summary(&spec, &people, self.statuses))
    }
}

/// Registers the executor of the action applied to ([`for_action`]).
pub(crate) struct Register<'a> {
    pub registry: &'a mut Registry,
    pub config: &'a ActionsConfig,
    pub pace: &'a dyn Fn(u64) -> SharedPace,
}

impl ForAction for Register<'_> {
    type Output = ();

    fn apply<A: BulkAction>(self) {
        let executor = A::executor(self.config, self.pace);
        self.registry.register(A::KIND.component(), executor);
    }
}
