//! Reads for dashboards and tests: one task, lists and counts by filter, history, nodes.

use bulkq_types::text::escape_like;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Condition, Expr, Func, LikeExpr, Query, UnionType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, QueryTrait,
};
use uuid::Uuid;

use super::announce::EventColumns;
use super::entity::{node, ready, task, task_event};
use super::{Store, history};
use crate::error::QueueError;
use crate::state::TaskStatus;
use crate::store::IdListFilter;
use crate::task::{Node, Page, QueueEvent, Task, TaskCursor, TaskEvent, TaskFilter, TaskListPage};

/// The WHERE clause of a [`TaskFilter`].
///
/// The statuses are written into the SQL as literals, not bound: PostgreSQL caches a
/// generic plan for a prepared statement after a few runs, and a generic plan cannot know
/// that `QUEUED` is a handful of rows in a million finished ones. It estimated a third of
/// the table and ran a parallel scan for every dashboard count. Literals are safe here:
/// they come from [`TaskStatus::as_str`], never from input.
///
/// Statuses that only tasks which ended badly have (FAILURE, ERROR, ABANDONED) are tested on
/// `problem_status` instead, the column derived from the status that holds them (NULL for
/// every other task) under a partial index: the admin's list of problems then reads those
/// few rows, not the whole table (no index names `workflow_status`; see
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
    if let Some(from) = filter.created_from {
        condition = condition.add(task::Column::CreatedDate.gte(from));
    }
    if let Some(until) = filter.created_until {
        condition = condition.add(task::Column::CreatedDate.lt(until));
    }
    if let Some(id) = filter.id {
        condition = condition.add(task::Column::Id.eq(id));
    }
    if let Some(text) = &filter.text {
        condition = condition.add(text_condition(text, filter.text_in_errors));
    }
    if let Some(listed) = &filter.listed_in {
        // Here only, as in `text_condition`.
        use sea_orm::sea_query::ExprTrait;
        let listing = |table: &String| {
            Query::select()
                .column(Alias::new(&listed.task_column))
                .from(Alias::new(table))
                .and_where(Expr::col(Alias::new(&listed.key_column)).eq(listed.key))
                .to_owned()
        };
        let mut tables = listed.tables.iter();
        condition = match tables.next() {
            Some(first) => {
                let mut listings = listing(first);
                for table in tables {
                    listings.union(UnionType::All, listing(table));
                }
                condition.add(task::Column::Id.in_subquery(listings))
            }
            // Listed in no table: no task.
            None => condition.add(Expr::cust("1 = 0")),
        };
    }
    condition
}

/// The tasks whose spec (as JSON text) or, if `in_errors`, error contains `text` (already
/// lowercase), case aside. No index serves it: the other filters narrow the rows first, and
/// finished tasks are pruned after their retention.
fn text_condition(text: &str, in_errors: bool) -> Condition {
    // Here only: its `min` would shadow the integers' elsewhere in the module.
    use sea_orm::sea_query::ExprTrait;
    let pattern = || LikeExpr::new(format!("%{}%", escape_like(text))).escape('\\');
    let spec = Expr::cust("lower(CAST(queue_task.execution_spec AS TEXT))").like(pattern());
    let mut any = Condition::any().add(spec);
    if in_errors {
        let error = Expr::expr(Func::lower(Expr::col((
            task::Entity,
            task::Column::WorkflowStatusDesc,
        ))));
        any = any.add(error.like(pattern()));
    }
    any
}

/// The tasks after `cursor` in the lists' order (newest first, then by id): written so that
/// both databases bound their walk of a creation-time index by `created_date <= …`.
fn after_cursor(cursor: TaskCursor) -> Condition {
    Condition::all()
        .add(task::Column::CreatedDate.lte(cursor.created))
        .add(
            Condition::any()
                .add(task::Column::CreatedDate.lt(cursor.created))
                .add(task::Column::Id.lt(cursor.id)),
        )
}

/// At most this many matches count as few: pages after a mark then count the matches
/// before it to know how many are left (see [`Store::task_page`]).
const FEW_MATCHES: u64 = 1_000;

/// Cuts `tasks` (read one beyond the page) to `limit` and returns the next page's mark when
/// there was one beyond.
fn next_mark(tasks: &mut Vec<Task>, limit: u64) -> Option<TaskCursor> {
    if tasks.len() as u64 <= limit {
        return None;
    }
    tasks.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    tasks.last().map(|task| TaskCursor {
        created: task.created_date,
        id: task.id,
    })
}

/// Whether the counts the triggers keep answer `filter`: they are kept by status and
/// component only.
pub(crate) fn counted_by_triggers(filter: &TaskFilter) -> bool {
    filter.owner_id.is_none()
        && filter.created_from.is_none()
        && filter.created_until.is_none()
        && filter.id.is_none()
        && filter.text.is_none()
        && filter.listed_in.is_none()
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

    /// Whether task `id` exists, read by key alone (a task's row carries its whole spec).
    pub async fn task_exists(&self, id: Uuid) -> Result<bool, QueueError> {
        let found = task::Entity::find_by_id(id)
            .select_only()
            .column(task::Column::Id)
            .into_tuple::<Uuid>()
            .one(&self.db)
            .await?;
        Ok(found.is_some())
    }

    /// Up to `limit` tasks that ended (stopped in a final status) at or after `since` and,
    /// if given, after `after` (an end time and task id, the last of the previous page), in
    /// that order, read through `idx_queue_task_stopped`: for telling their owners.
    pub async fn tasks_ended_since(
        &self,
        since: DateTime<Utc>,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: u64,
    ) -> Result<Vec<Task>, QueueError> {
        let mut query = task::Entity::find()
            .filter(task::Column::WorkflowStoppedDate.gte(since))
            .filter(task::Column::WorkflowStatus.is_in(TaskStatus::TERMINAL));
        if let Some((stopped, id)) = after {
            query = query.filter(
                Condition::any()
                    .add(task::Column::WorkflowStoppedDate.gt(stopped))
                    .add(
                        Condition::all()
                            .add(task::Column::WorkflowStoppedDate.eq(stopped))
                            .add(task::Column::Id.gt(id)),
                    ),
            );
        }
        Ok(query
            .order_by_asc(task::Column::WorkflowStoppedDate)
            .order_by_asc(task::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?)
    }

    /// Up to `limit` of `owner_id`'s tasks that ended at or after `since`, the latest end
    /// first: the dashboard's bell.
    pub async fn tasks_ended_of(
        &self,
        owner_id: Uuid,
        since: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<Task>, QueueError> {
        Ok(task::Entity::find()
            .filter(task::Column::OwnerId.eq(owner_id))
            .filter(task::Column::WorkflowStoppedDate.gte(since))
            .filter(task::Column::WorkflowStatus.is_in(TaskStatus::TERMINAL))
            .order_by_desc(task::Column::WorkflowStoppedDate)
            .order_by_desc(task::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?)
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

    /// A page of the tasks matching `filter`, newest first.
    pub async fn task_list(
        &self,
        filter: &TaskFilter,
        page: Page,
    ) -> Result<Vec<Task>, QueueError> {
        // The databases take limits as signed 64-bit numbers; a larger one would fail to
        // bind (and sqlx panics converting it).
        if i64::try_from(page.limit).is_err() {
            return Err(QueueError::Invalid(format!(
                "page limit out of range: {}",
                page.limit
            )));
        }
        let mut condition = filter_condition(filter);
        if let Some(cursor) = page.before {
            condition = condition.add(after_cursor(cursor));
        }
        Ok(task::Entity::find()
            .filter(condition)
            .order_by_desc(task::Column::CreatedDate)
            .order_by_desc(task::Column::Id)
            .limit(page.limit)
            .all(&self.db)
            .await?)
    }

    /// One page of a task list as the explorer shows it: the tasks, how many match in all
    /// (counted up to `count_cap`), and the mark of the next page, if there is one. The
    /// page and the count are read at once, on two connections.
    pub async fn task_page(
        &self,
        filter: &TaskFilter,
        page: Page,
        count_cap: u64,
    ) -> Result<TaskListPage, QueueError> {
        // One task more than the page: whether there is a next page, without another query.
        let mut probe = Page {
            limit: page.limit.saturating_add(1),
            ..page
        };
        if counted_by_triggers(filter) {
            // The count is exact and costs a few rows: read it first, and ask for no more
            // tasks than can match, so the database stops as soon as it has found them all
            // rather than read to the table's end for the page's last places. What makes
            // the running few fast, which no index may name (see `filter_condition`).
            let total = self.counted_tasks(filter).await?;
            let remaining = match page.before {
                None => Some(total),
                // After a mark, the few that match (running tasks, say) are counted down to
                // it: a short walk where they are, where reading past the last of them to
                // the table's end would not be. Many matches fill a page soon enough.
                Some(cursor) if total <= FEW_MATCHES => {
                    Some(total.saturating_sub(self.task_count_before(filter, cursor, total).await?))
                }
                Some(_) => None,
            };
            if let Some(remaining) = remaining {
                probe.limit = probe.limit.min(remaining);
            }
            let mut tasks = if probe.limit == 0 {
                Vec::new()
            } else {
                self.task_list(filter, probe).await?
            };
            let next = next_mark(&mut tasks, page.limit);
            return Ok(TaskListPage {
                tasks,
                total,
                more: false,
                next,
            });
        }
        let (mut tasks, (total, more)) = tokio::try_join!(
            self.task_list(filter, probe),
            self.task_count_up_to(filter, count_cap)
        )?;
        let next = next_mark(&mut tasks, page.limit);
        Ok(TaskListPage {
            tasks,
            total,
            more,
            next,
        })
    }

    /// How many tasks matching `filter` come before `cursor` in the lists' order (newer, or
    /// as new and a higher id), counting at most `cap`: the walk from the top of the list
    /// to the mark.
    async fn task_count_before(
        &self,
        filter: &TaskFilter,
        cursor: TaskCursor,
        cap: u64,
    ) -> Result<u64, QueueError> {
        let before = Condition::any()
            .add(task::Column::CreatedDate.gt(cursor.created))
            .add(
                Condition::all()
                    .add(task::Column::CreatedDate.eq(cursor.created))
                    .add(task::Column::Id.gte(cursor.id)),
            );
        let filter = filter_condition(filter).add(before);
        self.count_up_to(filter, cap).await.map(|(count, _)| count)
    }

    /// How many tasks match `filter`. Where the counts the triggers keep
    /// (`queue_task_count`) answer it, this reads those few rows whatever the table's size;
    /// otherwise it counts the rows through the filter's index.
    pub async fn task_count(&self, filter: &TaskFilter) -> Result<u64, QueueError> {
        if counted_by_triggers(filter) {
            return self.counted_tasks(filter).await;
        }
        Ok(task::Entity::find()
            .filter(filter_condition(filter))
            .count(&self.db)
            .await?)
    }

    /// How many tasks match `filter`, counting at most `cap` rows: `(count, more)`, where
    /// `more` says that more than `count` match. A list shows "more than 10,000" rather
    /// than read a million rows to number them. Exact whenever the kept counts answer.
    pub async fn task_count_up_to(
        &self,
        filter: &TaskFilter,
        cap: u64,
    ) -> Result<(u64, bool), QueueError> {
        if counted_by_triggers(filter) {
            return Ok((self.counted_tasks(filter).await?, false));
        }
        self.count_up_to(filter_condition(filter), cap).await
    }

    /// How many tasks meet `condition`, counting at most `cap` rows: `(count, more)`.
    async fn count_up_to(&self, condition: Condition, cap: u64) -> Result<(u64, bool), QueueError> {
        let limit = cap.saturating_add(1).min(i64::MAX as u64);
        let matching = task::Entity::find()
            .select_only()
            .column(task::Column::Id)
            .filter(condition)
            .limit(limit)
            .into_query();
        let count = Query::select()
            .expr(Expr::cust("COUNT(*)"))
            .from_subquery(matching, "matching")
            .to_owned();
        let row = self
            .db
            .query_one_raw(self.db.get_database_backend().build(&count))
            .await?;
        let counted = row
            .map(|row| row.try_get_by_index::<i64>(0))
            .transpose()?
            .unwrap_or(0);
        let counted = u64::try_from(counted).unwrap_or(0);
        Ok((counted.min(cap), counted > cap))
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
