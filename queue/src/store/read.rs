//! Reads for dashboards and tests: one task, lists and counts by filter, history, nodes.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Condition, Expr};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::announce::EventColumns;
use super::entity::{node, ready, task, task_event};
use super::{Store, history};
use crate::error::QueueError;
use crate::state::TaskStatus;
use crate::store::IdListFilter;
use crate::task::{Node, Page, QueueEvent, Task, TaskEvent, TaskFilter};

/// The WHERE clause of a [`TaskFilter`].
///
/// The statuses are written into the SQL as literals, not bound: PostgreSQL caches a
/// generic plan for a prepared statement after a few runs, and a generic plan cannot know
/// that `QUEUED` is a handful of rows in a million finished ones. It estimated a third of
/// the table and ran a parallel scan for every dashboard count. Literals are safe here:
/// they come from [`TaskStatus::as_str`], never from input.
///
/// Statuses that only tasks which ended badly have (FAILURE, ERROR, ABANDONED) are tested on
/// `problem_status` instead, the generated column that holds them (NULL for every other
/// task) under a partial index: the admin's list of problems then reads those few rows,
/// not the whole table (no index names `workflow_status`; see
/// `m20261124_000080_hot_updates`).
pub(crate) fn filter_condition(filter: &TaskFilter) -> Condition {
    let mut condition = Condition::all();
    if !filter.statuses.is_empty() {
        let column = if filter.statuses.iter().all(TaskStatus::is_problem) {
            "queue_task.problem_status"
        } else {
            "queue_task.workflow_status"
        };
        condition = condition.add(Expr::cust(status_in(column, &filter.statuses)));
    }
    if let Some(component) = &filter.component {
        condition = condition.add(task::Column::ExecutionComponentName.eq(component.as_str()));
    }
    if let Some(owner) = filter.owner_id {
        condition = condition.add(task::Column::OwnerId.eq(owner));
    }
    condition
}

/// `column IN ('A', 'B')`, with the statuses as literals.
fn status_in(column: &str, statuses: &[TaskStatus]) -> String {
    let literals: Vec<String> = statuses
        .iter()
        .map(|status| format!("'{}'", status.as_str()))
        .collect();
    format!("{column} IN ({})", literals.join(", "))
}

impl Store {
    pub async fn task_get(&self, id: Uuid) -> Result<Option<Task>, QueueError> {
        Ok(task::Entity::find_by_id(id).one(&self.db).await?)
    }

    /// The newest task enqueued with `unique_key`, whatever its status, read within `conn`.
    pub(crate) async fn task_get_by_unique_key<C: ConnectionTrait>(
        &self,
        conn: &C,
        unique_key: &str,
    ) -> Result<Option<Task>, QueueError> {
        Ok(task::Entity::find()
            .filter(task::Column::UniqueKey.eq(unique_key))
            .order_by_desc(task::Column::CreatedDate)
            .one(conn)
            .await?)
    }

    /// The events of the tasks `ids` names that still exist, as their rows are now.
    pub(crate) async fn task_events(&self, ids: &[Uuid]) -> Result<Vec<QueueEvent>, QueueError> {
        let rows = task::Entity::find()
            .select_only()
            .columns(EventColumns::COLUMNS)
            .filter(task::Column::Id.in_id_list(self.backend, ids.iter().copied()))
            .into_model::<EventColumns>()
            .all(&self.db)
            .await?;
        Ok(rows.into_iter().map(QueueEvent::from).collect())
    }

    /// Tasks matching `filter`, newest first.
    pub async fn task_list(
        &self,
        filter: &TaskFilter,
        page: Page,
    ) -> Result<Vec<Task>, QueueError> {
        // The databases take offsets and limits as signed 64-bit numbers; a larger one would
        // fail to bind (and sqlx panics converting it).
        if i64::try_from(page.offset).is_err() || i64::try_from(page.limit).is_err() {
            return Err(QueueError::Invalid(format!(
                "page out of range: offset {}, limit {}",
                page.offset, page.limit
            )));
        }
        Ok(task::Entity::find()
            .filter(filter_condition(filter))
            .order_by_desc(task::Column::CreatedDate)
            .order_by_desc(task::Column::Id)
            .offset(page.offset)
            .limit(page.limit)
            .all(&self.db)
            .await?)
    }

    /// How many tasks match `filter`. Without an owner this reads the counts the triggers
    /// keep (`queue_task_count`), a few rows whatever the table's size; an owner's tasks are
    /// counted through the owner's index.
    pub async fn task_count(&self, filter: &TaskFilter) -> Result<u64, QueueError> {
        if filter.owner_id.is_some() {
            return Ok(task::Entity::find()
                .filter(filter_condition(filter))
                .count(&self.db)
                .await?);
        }
        self.counted_tasks(filter).await
    }

    /// When the longest-waiting queued task became due: the queue's backlog age. A task
    /// scheduled for later is not waiting yet, so only due tasks count.
    pub async fn task_oldest_due(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, QueueError> {
        Ok(ready::Entity::find()
            .select_only()
            .column_as(ready::Column::RunAt.min(), "oldest")
            .filter(ready::Column::RunAt.lte(now))
            .into_tuple::<Option<DateTime<Utc>>>()
            .one(&self.db)
            .await?
            .flatten())
    }

    /// Running tasks (SCHEDULING/EXECUTING) that look stuck, newest first: held by a node with
    /// no heartbeat since `dead_before` (the rescuer will take them back), or without a
    /// checkpoint or any other change since `quiet_before` (hung, or very slow, work).
    pub async fn task_list_stalled(
        &self,
        dead_before: DateTime<Utc>,
        quiet_before: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<Task>, QueueError> {
        let live_nodes = sea_orm::sea_query::Query::select()
            .column(node::Column::NodeId)
            .from(node::Entity)
            .and_where(node::Column::HeartbeatDate.gte(dead_before))
            .to_owned();
        Ok(task::Entity::find()
            .filter(
                task::Column::WorkflowStatus.is_in([TaskStatus::Scheduling, TaskStatus::Executing]),
            )
            .filter(
                Condition::any()
                    .add(task::Column::ModifiedDate.lt(quiet_before))
                    .add(task::Column::ScheduledByProcess.not_in_subquery(live_nodes)),
            )
            .order_by_desc(task::Column::CreatedDate)
            .limit(limit)
            .all(&self.db)
            .await?)
    }

    /// The transitions of a task (and its attempts' errors), oldest first: the stored
    /// entries and those its row implies (see `history`). Empty for a task that does not
    /// exist (or was pruned).
    pub async fn task_history(&self, id: Uuid) -> Result<Vec<TaskEvent>, QueueError> {
        // The row before the entries: a transition committing in between then shows up as
        // a stored entry and as the row's newer state, never as neither.
        let task = self.task_get(id).await?;
        let stored = task_event::Entity::find()
            .filter(task_event::Column::TaskId.eq(id))
            .order_by_asc(task_event::Column::OccurredDate)
            .order_by_asc(task_event::Column::Id)
            .all(&self.db)
            .await?;
        Ok(history::with_implied(task.as_ref(), stored))
    }

    /// Every node incarnation with a heartbeat row, most recent heartbeat first.
    pub async fn node_list(&self) -> Result<Vec<Node>, QueueError> {
        Ok(node::Entity::find()
            .order_by_desc(node::Column::HeartbeatDate)
            .all(&self.db)
            .await?)
    }
}
