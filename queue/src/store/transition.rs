//! Guarded state changes. Every [`Transition`] becomes one UPDATE whose WHERE clause names
//! the statuses it may start from (and, for a worker, the lease it holds), so whoever moved
//! the task first wins and every later, stale writer matches no row.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query, UpdateStatement};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, QueryFilter, QueryTrait,
    Statement, UpdateMany,
};
use uuid::Uuid;

use super::announce::{self, EventColumns};
use super::claim::ClaimMatch;
use super::entity::task::{self, Column, Entity};
use super::entity::task_event;
use super::{INSERT_CHUNK, Store, WriteTransaction, dialect, history};
use crate::error::QueueError;
use crate::state::{TaskStatus, Transition};
use crate::task::{QueueEvent, Task};

/// A worker's outcome for one claimed task.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub task_id: Uuid,
    /// The lease the worker claimed the task under.
    pub lease_version: i64,
    pub transition: Transition,
}

impl Finish {
    /// The completion of `task` under the lease it was claimed with.
    pub fn complete(task: &Task) -> Self {
        Finish {
            task_id: task.id,
            lease_version: task.lease_version,
            transition: Transition::Complete,
        }
    }
}

/// The column changes of `transition`: the new status and its description, the audit columns,
/// a new lease (ending any claim), and what the particular transition implies.
pub(crate) fn set_transition(
    update: UpdateMany<task::Entity>,
    transition: &Transition,
    now: DateTime<Utc>,
    actor: &str,
) -> UpdateMany<task::Entity> {
    let update = update
        .col_expr(
            Column::WorkflowStatus,
            Expr::value(transition.target().as_str()),
        )
        .col_expr(
            Column::WorkflowStatusDesc,
            Expr::value(transition.description().map(str::to_owned)),
        )
        .col_expr(Column::ModifiedDate, Expr::value(now))
        .col_expr(Column::ModifiedBy, Expr::value(actor))
        .col_expr(Column::LeaseVersion, Expr::col(Column::LeaseVersion).add(1));
    let stopped = |update: UpdateMany<task::Entity>| {
        update.col_expr(Column::WorkflowStoppedDate, Expr::value(now))
    };
    match transition {
        Transition::Complete
        | Transition::Fail { .. }
        | Transition::Error { .. }
        | Transition::Abandon { .. } => stopped(update),
        Transition::Retry { at, .. } => update.col_expr(Column::RunAt, Expr::value(*at)),
        // The interrupted attempt does not count against the budget.
        Transition::HandBack => update
            .col_expr(Column::RunAt, Expr::value(now))
            .col_expr(Column::Attempt, Expr::col(Column::Attempt).sub(1)),
        // Nor does a yielded one, and the task keeps its place among its owner's.
        Transition::Yield => update.col_expr(Column::Attempt, Expr::col(Column::Attempt).sub(1)),
        // A fresh budget: the admin decided the cause is fixed. The checkpoint stays, so the
        // work resumes where it stopped.
        Transition::Requeue => update
            .col_expr(Column::RunAt, Expr::value(now))
            .col_expr(Column::Attempt, Expr::value(0))
            .col_expr(Column::CrashCount, Expr::value(0))
            .col_expr(
                Column::WorkflowStoppedDate,
                Expr::value(Option::<DateTime<Utc>>::None),
            ),
    }
}

/// The guard of `transition`: the task is in a status the transition may start from.
pub(crate) fn guarded(
    update: UpdateMany<task::Entity>,
    transition: &Transition,
) -> UpdateMany<task::Entity> {
    let update =
        update.filter(Column::WorkflowStatus.is_in(transition.allowed_from().iter().copied()));
    if matches!(transition, Transition::Requeue) {
        // Reopening a finished task must not collide with an active task that took over
        // its unique key meanwhile; such a task is skipped instead. A running task holds
        // its own key, which is no collision.
        update.filter(Expr::cust(
            "(unique_key IS NULL OR unique_key NOT IN (SELECT t.active_unique_key \
             FROM queue_task t WHERE t.active_unique_key IS NOT NULL AND t.id <> queue_task.id))",
        ))
    } else {
        update
    }
}

impl Store {
    /// Applies workers' outcomes, each guarded by the task's lease and running status.
    /// Returns the changes, as the events published for them; an outcome whose claim was
    /// lost meanwhile (rescued, abandoned) changes nothing and is absent.
    ///
    /// Completions (nearly every outcome) all set the same columns and store no history (the
    /// row implies it), so each chunk of them is one statement, committed on its own, which
    /// returns only the columns of the tasks' events. The other outcomes, with their history
    /// entries, share one transaction.
    pub async fn task_finish_many_if_running(
        &self,
        finishes: &[Finish],
        now: DateTime<Utc>,
        node_id: &str,
    ) -> Result<Vec<QueueEvent>, QueueError> {
        let (completions, others): (Vec<&Finish>, Vec<&Finish>) = finishes
            .iter()
            .partition(|finish| finish.transition == Transition::Complete);
        let mut changed = Vec::with_capacity(finishes.len());
        for chunk in completions.chunks(INSERT_CHUNK) {
            let claims = chunk.iter().map(|f| (f.task_id, f.lease_version));
            let completed: Vec<EventColumns> = self
                .run_alone(self.completion(claims, now, node_id))
                .await?;
            let events: Vec<QueueEvent> = completed.into_iter().map(QueueEvent::from).collect();
            self.events().publish_events(&events);
            changed.extend(events);
        }
        if others.is_empty() {
            return Ok(changed);
        }
        let txn = self.begin_write().await?;
        let mut moved = Vec::with_capacity(others.len());
        let mut entries = Vec::new();
        for finish in others {
            let update = set_transition(Entity::update_many(), &finish.transition, now, node_id)
                .filter(Column::Id.eq(finish.task_id))
                .filter(Column::LeaseVersion.eq(finish.lease_version));
            for task in self
                .update_tasks(&*txn, guarded(update, &finish.transition))
                .await?
            {
                // A hand-back or a yield gives its attempt back: the claim it ended ran under
                // one more.
                let gave_back =
                    matches!(finish.transition, Transition::HandBack | Transition::Yield);
                let claimed = task.attempt + i32::from(gave_back);
                entries.extend(history::transition_entries(
                    &task,
                    Some(claimed),
                    node_id,
                    now,
                ));
                moved.push(task);
            }
        }
        self.commit_transitions(txn, &moved, entries).await?;
        changed.extend(moved.iter().map(QueueEvent::from));
        Ok(changed)
    }

    /// The statement that completes the tasks of `claims` still held under their lease (the
    /// lease alone says so, see `ClaimMatch`), returning the columns of their events. On
    /// PostgreSQL a function does it and keeps the counts itself (see
    /// [`dialect::POSTGRES_COMPLETE`]).
    pub(crate) fn completion(
        &self,
        claims: impl IntoIterator<Item = (Uuid, i64)>,
        now: DateTime<Utc>,
        node_id: &str,
    ) -> Statement {
        if self.backend == DbBackend::Postgres {
            let (ids, leases): (Vec<Uuid>, Vec<i64>) = claims.into_iter().unzip();
            let values = [ids.into(), leases.into(), now.into(), node_id.into()];
            let statement =
                Statement::from_sql_and_values(self.backend, dialect::POSTGRES_COMPLETE, values);
            return announce::announcing(statement, self.events().origin());
        }
        let claims = ClaimMatch::new(self.backend, claims);
        let update = set_transition(Entity::update_many(), &Transition::Complete, now, node_id)
            .filter(claims.condition);
        let mut query = update.into_query();
        if let Some(from) = claims.from {
            query.from(from);
        }
        query.returning(Query::returning().columns(EventColumns::COLUMNS));
        self.announcing(&query)
    }

    /// Runs `update` (with `RETURNING *`) within `conn`, announcing the changed tasks to the
    /// other nodes in the same statement (see [`announce::announcing`]).
    pub(crate) async fn update_tasks<C: ConnectionTrait>(
        &self,
        conn: &C,
        update: UpdateMany<Entity>,
    ) -> Result<Vec<Task>, QueueError> {
        Ok(Task::find_by_statement(self.announced(update))
            .all(conn)
            .await?)
    }

    /// `update` returning the changed rows, and announcing them on PostgreSQL.
    fn announced(&self, update: UpdateMany<Entity>) -> Statement {
        let mut query = update.into_query();
        query.returning_all();
        self.announcing(&query)
    }

    /// `update`, whose RETURNING includes [`EventColumns::COLUMNS`], announcing the changed
    /// tasks on PostgreSQL.
    fn announcing(&self, update: &UpdateStatement) -> Statement {
        announce::announcing(self.backend.build(update), self.events().origin())
    }

    /// Runs `statement`, an announcing UPDATE that returns rows of tasks, as a transaction
    /// of its own: on PostgreSQL the statement alone (one round trip; a single statement is
    /// atomic), on SQLite inside the store's write slot, taking the write lock at `BEGIN`
    /// (see [`Store::begin_write`]).
    pub(crate) async fn run_alone<Row: FromQueryResult + Send + Sync>(
        &self,
        statement: Statement,
    ) -> Result<Vec<Row>, QueueError> {
        if self.backend == DbBackend::Postgres {
            return Ok(Row::find_by_statement(statement).all(&self.db).await?);
        }
        let txn = self.begin_write().await?;
        let rows = Row::find_by_statement(statement).all(&*txn).await?;
        txn.commit().await?;
        Ok(rows)
    }

    /// Finishes a transaction that moved `changed` (announced by their UPDATEs): stores their
    /// history `entries`, wakes the producers when a task went back to QUEUED, commits, and
    /// publishes the local events.
    pub(crate) async fn commit_transitions(
        &self,
        txn: WriteTransaction,
        changed: &[Task],
        entries: Vec<task_event::Model>,
    ) -> Result<(), QueueError> {
        history::insert(&*txn, entries).await?;
        let requeued = changed
            .iter()
            .any(|task| task.workflow_status == TaskStatus::Queued);
        if requeued {
            announce::notify_wake(&*txn).await?;
        }
        txn.commit().await?;
        if requeued {
            self.notify_committed();
        }
        self.events().publish(changed);
        Ok(())
    }
}
