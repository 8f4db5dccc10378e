//! Operations for administrators: retry, requeue and abandon (one task or many), pause and resume a
//! component. All are guarded and idempotent: repeating one changes nothing more.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use super::entity::component_pause;
use super::entity::task::{self, Column};
use super::read::filter_condition;
use super::transition::{guarded, set_transition};
use super::{INSERT_CHUNK, Store, WriteClass, announce, history};
use crate::error::QueueError;
use crate::state::{TaskStatus, Transition};
use crate::task::{BulkOutcome, PausedComponent, Task, TaskSelector};

impl Store {
    /// FAILURE / ERROR / ABANDONED → QUEUED with a fresh attempt budget. A task whose unique
    /// key another active task holds now is skipped.
    pub async fn task_retry_many(
        &self,
        selector: &TaskSelector,
        actor: &str,
    ) -> Result<BulkOutcome, QueueError> {
        self.task_transition_many(selector, &Transition::Requeue, &TaskStatus::PROBLEMS, actor)
            .await
    }

    /// SCHEDULING / EXECUTING → QUEUED at once with a fresh attempt budget: a stalled task
    /// taken back from its node without waiting for the rescuer. The node's worker finds
    /// its lease gone at its next checkpoint or heartbeat, as when a task is abandoned.
    pub async fn task_requeue_running_many(
        &self,
        selector: &TaskSelector,
        actor: &str,
    ) -> Result<BulkOutcome, QueueError> {
        self.task_transition_many(selector, &Transition::Requeue, &TaskStatus::RUNNING, actor)
            .await
    }

    /// Any status but COMPLETED and ABANDONED → ABANDONED. A running task's worker finds out
    /// at its next checkpoint or heartbeat (its lease is gone), has its cancellation token
    /// fired, and its result is discarded.
    pub async fn task_abandon_many(
        &self,
        selector: &TaskSelector,
        reason: &str,
        actor: &str,
    ) -> Result<BulkOutcome, QueueError> {
        let transition = Transition::Abandon {
            reason: format!("abandoned by {actor}: {reason}"),
        };
        self.task_transition_many(selector, &transition, transition.allowed_from(), actor)
            .await
    }

    /// QUEUED / SCHEDULING / EXECUTING → ABANDONED, "cancelled" by `actor`: an owner's
    /// stop, which leaves tasks that have already ended as they are.
    pub async fn task_cancel_many(
        &self,
        selector: &TaskSelector,
        actor: &str,
    ) -> Result<BulkOutcome, QueueError> {
        let transition = Transition::Abandon {
            reason: format!("abandoned by {actor}: cancelled"),
        };
        self.task_transition_many(selector, &transition, &TaskStatus::ACTIVE, actor)
            .await
    }

    /// [`Store::task_retry_many`] for one task; `true` if it changed.
    pub async fn task_retry(&self, id: Uuid, actor: &str) -> Result<bool, QueueError> {
        let outcome = self
            .task_retry_many(&TaskSelector::Ids(vec![id]), actor)
            .await?;
        Ok(!outcome.changed.is_empty())
    }

    /// [`Store::task_abandon_many`] for one task; `true` if it changed.
    pub async fn task_abandon(
        &self,
        id: Uuid,
        reason: &str,
        actor: &str,
    ) -> Result<bool, QueueError> {
        let outcome = self
            .task_abandon_many(&TaskSelector::Ids(vec![id]), reason, actor)
            .await?;
        Ok(!outcome.changed.is_empty())
    }

    /// A waiting task's new `run_at` (a past one means now), its new priority, or both: the
    /// owner's or an admin's steer. `None` when the task is not QUEUED any more (it started,
    /// or ended). Its history says who moved it and where; the nodes are woken, as the task
    /// may be due now.
    pub async fn task_reschedule(
        &self,
        id: Uuid,
        run_at: Option<DateTime<Utc>>,
        priority: Option<i32>,
        actor: &str,
    ) -> Result<Option<Task>, QueueError> {
        let now = self.clock.now();
        let run_at = run_at.map(|at| at.max(now));
        let mut moves = Vec::with_capacity(2);
        if let Some(at) = run_at {
            moves.push(format!("run at {}", at.format("%Y-%m-%d %H:%M UTC")));
        }
        if let Some(priority) = priority {
            moves.push(format!("priority {priority}"));
        }
        let mut update = task::Entity::update_many()
            .col_expr(
                Column::WorkflowStatusDesc,
                Expr::value(format!("rescheduled by {actor}: {}", moves.join(", "))),
            )
            .col_expr(Column::ModifiedDate, Expr::value(now))
            .col_expr(Column::ModifiedBy, Expr::value(actor));
        if let Some(at) = run_at {
            update = update.col_expr(Column::RunAt, Expr::value(at));
        }
        if let Some(priority) = priority {
            update = update.col_expr(Column::Priority, Expr::value(priority));
        }
        let update = update
            .filter(Column::Id.eq(id))
            .filter(Column::WorkflowStatus.eq(TaskStatus::Queued));
        let txn = self.begin_write_as(WriteClass::Interactive).await?;
        let moved = self.update_tasks(&*txn, update).await?;
        let entries = moved
            .iter()
            .flat_map(|task| history::transition_entries(task, None, actor, now))
            .collect();
        self.commit_transitions(txn, &moved, entries).await?;
        Ok(moved.into_iter().next())
    }

    /// Applies an admin transition to the selected tasks in one transaction, to those of
    /// them in a status of `from` that the transition may start from.
    ///
    /// A transition that may end a claim (abandoning running work) moves the running tasks
    /// in a pass of its own, so that their history also stores the claim it ended (see
    /// `history`); the row alone cannot tell afterwards whether the task was running.
    async fn task_transition_many(
        &self,
        selector: &TaskSelector,
        transition: &Transition,
        from: &[TaskStatus],
        actor: &str,
    ) -> Result<BulkOutcome, QueueError> {
        let now = self.clock.now();
        let txn = self.begin_write_as(WriteClass::Interactive).await?;
        let ends_claims = from
            .iter()
            .any(|status| TaskStatus::RUNNING.contains(status));
        // `Some(running)`: the pass over the tasks that are (or are not) running.
        let passes: &[Option<bool>] = if ends_claims {
            &[Some(true), Some(false)]
        } else {
            &[None]
        };
        let mut changed = Vec::new();
        let mut entries = Vec::new();
        for &running in passes {
            let update = || {
                let update = set_transition(task::Entity::update_many(), transition, now, actor);
                let update = match running {
                    Some(true) => update.filter(Column::WorkflowStatus.is_in(TaskStatus::RUNNING)),
                    Some(false) => {
                        update.filter(Column::WorkflowStatus.is_not_in(TaskStatus::RUNNING))
                    }
                    None => update,
                };
                guarded(update, transition)
                    .filter(Column::WorkflowStatus.is_in(from.iter().copied()))
            };
            let mut moved = Vec::new();
            match selector {
                TaskSelector::Ids(ids) => {
                    for chunk in ids.chunks(INSERT_CHUNK) {
                        let update = update().filter(Column::Id.is_in(chunk.iter().copied()));
                        moved.extend(self.update_tasks(&*txn, update).await?);
                    }
                }
                TaskSelector::Filter(filter) => {
                    let update = update().filter(filter_condition(filter));
                    moved = self.update_tasks(&*txn, update).await?;
                }
            }
            for task in &moved {
                let ended_claim = (running == Some(true)).then_some(task.attempt);
                entries.extend(history::transition_entries(task, ended_claim, actor, now));
            }
            changed.extend(moved);
        }
        self.commit_transitions(txn, &changed, entries).await?;

        let changed: Vec<Uuid> = changed.into_iter().map(|task| task.id).collect();
        let skipped = match selector {
            TaskSelector::Ids(ids) => ids
                .iter()
                .filter(|id| !changed.contains(id))
                .copied()
                .collect(),
            TaskSelector::Filter(_) => Vec::new(),
        };
        Ok(BulkOutcome { changed, skipped })
    }

    /// Stops every node from claiming tasks of `component` (running ones finish); `true` if
    /// it was not paused before, or only by its running limit (the admin's pause then stays
    /// when the limit would lift its own).
    pub async fn component_pause(&self, component: &str, actor: &str) -> Result<bool, QueueError> {
        use sea_orm::sea_query::ExprTrait as _;
        let row = component_pause::ActiveModel {
            component: Set(component.to_owned()),
            paused_date: Set(self.clock.now()),
            paused_by: Set(actor.to_owned()),
        };
        let txn = self.begin_write_as(WriteClass::Interactive).await?;
        let inserted = component_pause::Entity::insert(row)
            .on_conflict(
                OnConflict::column(component_pause::Column::Component)
                    .update_columns([
                        component_pause::Column::PausedBy,
                        component_pause::Column::PausedDate,
                    ])
                    .action_and_where(
                        Expr::col((component_pause::Entity, component_pause::Column::PausedBy))
                            .eq(super::limits::LIMIT_PAUSER),
                    )
                    .to_owned(),
            )
            .try_insert()
            .exec_without_returning(&*txn)
            .await?;
        txn.commit().await?;
        Ok(matches!(inserted, sea_orm::TryInsertResult::Inserted(n) if n > 0))
    }

    /// Lets nodes claim tasks of `component` again; `true` if it was paused. An admin's
    /// write: a person waits for it.
    pub async fn component_resume(&self, component: &str) -> Result<bool, QueueError> {
        self.component_resume_as(component, WriteClass::Interactive)
            .await
    }

    /// [`Store::component_resume`] as a write of `class`. A resume nobody waits on (a
    /// benchmark starting its clock) is `Background`, so it does not count as a person
    /// writing and the work it lets go runs in full batches.
    pub async fn component_resume_as(
        &self,
        component: &str,
        class: WriteClass,
    ) -> Result<bool, QueueError> {
        let txn = self.begin_write_as(class).await?;
        let deleted = component_pause::Entity::delete_many()
            .filter(component_pause::Column::Component.eq(component))
            .exec(&*txn)
            .await?;
        if deleted.rows_affected > 0 {
            announce::notify_wake(&*txn).await?;
        }
        txn.commit().await?;
        if deleted.rows_affected > 0 {
            self.notify_committed();
        }
        Ok(deleted.rows_affected > 0)
    }

    /// The paused components.
    pub async fn component_paused_list(&self) -> Result<Vec<PausedComponent>, QueueError> {
        Ok(component_pause::Entity::find().all(&self.db).await?)
    }
}
