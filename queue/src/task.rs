//! The types callers hand to the queue and get back: new tasks, rows, filters, events.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use bulkq_types::task_query::TaskCursor;

use crate::state::TaskStatus;

pub use crate::store::entity::component_pause::Model as PausedComponent;
pub use crate::store::entity::node::Model as Node;
pub use crate::store::entity::task::Model as Task;
pub use crate::store::entity::task_event::Model as TaskEvent;

/// The attempt budget of a task enqueued without one: enough to ride out a restart or two
/// and a flaky dependency, few enough that a broken task fails within the hour.
pub const MAX_ATTEMPTS_DEFAULT: i32 = 5;

/// A task to enqueue. Build it with [`NewTask::new`] and the `with_…` methods, or fill the
/// fields directly.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// The registered executor that will run it (e.g. `caseload.program_status_change`).
    pub component: String,
    /// The unit of work, as the executor expects it.
    pub spec: serde_json::Value,
    /// The person who asked for the work.
    pub owner_id: Uuid,
    /// Whose permissions the work runs with.
    pub run_as_id: Uuid,
    /// Recorded as `created_by` and `modified_by`.
    pub created_by: String,
    /// Not before this; `None` means now.
    pub run_at: Option<DateTime<Utc>>,
    /// Higher runs first (default 0).
    pub priority: i32,
    /// `None` means [`MAX_ATTEMPTS_DEFAULT`].
    pub max_attempts: Option<i32>,
    /// Enqueueing again while a task with this key has work ahead of it returns that task.
    pub unique_key: Option<String>,
    /// For the progress bar, when known up front.
    pub progress_total: Option<i64>,
}

impl NewTask {
    /// A task that runs as its owner, created by its owner, as soon as possible.
    pub fn new(component: impl Into<String>, spec: serde_json::Value, owner_id: Uuid) -> Self {
        Self {
            component: component.into(),
            spec,
            owner_id,
            run_as_id: owner_id,
            created_by: owner_id.to_string(),
            run_at: None,
            priority: 0,
            max_attempts: None,
            unique_key: None,
            progress_total: None,
        }
    }

    pub fn with_run_at(mut self, run_at: DateTime<Utc>) -> Self {
        self.run_at = Some(run_at);
        self
    }

    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    pub fn with_max_attempts(mut self, max_attempts: i32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    pub fn with_unique_key(mut self, key: impl Into<String>) -> Self {
        self.unique_key = Some(key.into());
        self
    }

    pub fn with_run_as(mut self, run_as_id: Uuid) -> Self {
        self.run_as_id = run_as_id;
        self
    }

    pub fn with_created_by(mut self, created_by: impl Into<String>) -> Self {
        self.created_by = created_by.into();
        self
    }

    pub fn with_progress_total(mut self, total: i64) -> Self {
        self.progress_total = Some(total);
        self
    }
}

/// Which tasks a list, count or admin operation looks at; empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskFilter {
    /// Any of these statuses (all when empty).
    pub statuses: Vec<TaskStatus>,
    pub component: Option<String>,
    pub owner_id: Option<Uuid>,
    /// Created at or after this.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before this.
    pub created_until: Option<DateTime<Utc>>,
    /// Only this task.
    pub id: Option<Uuid>,
    /// Lowercase text its spec (or, with `text_in_errors`, its error) contains.
    pub text: Option<String>,
    pub text_in_errors: bool,
    /// Only the tasks some tables of the application list for one key.
    pub listed_in: Option<ListedIn>,
}

/// The tasks tables of the application list against one key: those whose id is in
/// `task_column` of any of `tables` on a row whose `key_column` is `key` (the tasks that
/// recorded an outcome for a person, say). Names come from code, never from input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedIn {
    pub tables: Vec<String>,
    pub task_column: String,
    pub key_column: String,
    pub key: Uuid,
}

/// A page of a list, newest first: the `limit` tasks after `before` (from the newest when
/// absent). A mark, not an offset, so a page costs the same however deep it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub before: Option<TaskCursor>,
    pub limit: u64,
}

impl Page {
    /// The newest `limit` tasks.
    pub fn first(limit: u64) -> Self {
        Page {
            before: None,
            limit,
        }
    }
}

/// A page of a task list: the tasks, newest first, how many match in all (`total`, counted
/// up to a cap; `more` when more match), and where the next page starts.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskListPage {
    pub tasks: Vec<Task>,
    pub total: u64,
    pub more: bool,
    pub next: Option<TaskCursor>,
}

/// The tasks an admin operation applies to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaskSelector {
    Ids(Vec<Uuid>),
    /// Every task matching the filter whose status allows the operation.
    Filter(TaskFilter),
}

/// What an admin operation did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkOutcome {
    /// Tasks the operation moved.
    pub changed: Vec<Uuid>,
    /// Requested ids it left alone: unknown, or in a status the operation does not apply to
    /// (which makes repeating an operation harmless). Always empty for a filter, which only
    /// matches tasks the operation applies to.
    pub skipped: Vec<Uuid>,
}

/// How many tasks of a component are in a status: one line of the queue health view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCount {
    pub component: String,
    pub status: TaskStatus,
    pub count: i64,
}

/// A change of a task, broadcast to subscribers (live UI, tests waiting for an outcome).
///
/// PostgreSQL notifications carry it as a JSON array of its fields in this order (see
/// `store::announce`): reorder the fields there too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueEvent {
    pub task_id: Uuid,
    pub component: String,
    pub owner_id: Uuid,
    pub status: TaskStatus,
    pub attempt: i32,
    pub progress_done: i64,
    pub progress_total: Option<i64>,
}

impl From<&Task> for QueueEvent {
    fn from(task: &Task) -> Self {
        Self {
            task_id: task.id,
            component: task.execution_component_name.clone(),
            owner_id: task.owner_id,
            status: task.workflow_status,
            attempt: task.attempt,
            progress_done: task.progress_done,
            progress_total: task.progress_total,
        }
    }
}
