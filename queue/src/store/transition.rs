//! Guarded state changes. Every [`Transition`] becomes one UPDATE whose WHERE clause names
//! the statuses it may start from (and, for a worker, the lease it holds), so whoever moved
//! the task first wins and every later, stale writer matches no row.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, UpdateMany};
use uuid::Uuid;

use super::claim::held_by_lease;
use super::entity::task::{self, Column};
use super::{Store, WriteTransaction, history};
use crate::error::QueueError;
use crate::state::{TaskStatus, Transition};
use crate::task::Task;

/// A worker's outcome for one claimed task.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub task_id: Uuid,
    /// The lease the worker claimed the task under.
    pub lease_version: i64,
    pub transition: Transition,
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
        // A fresh budget: the admin decided the cause is fixed. The checkpoint stays, so the
        // work resumes where it stopped.
        Transition::Requeue => update
            .col_expr(Column::RunAt, Expr::value(now))
            .col_expr(Column::Attempt, Expr::value(0))
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
        // its unique key meanwhile; such a task is skipped instead.
        update.filter(Expr::cust(
            "(unique_key IS NULL OR unique_key NOT IN (SELECT t.unique_key FROM queue_task t \
             WHERE t.unique_key IS NOT NULL \
               AND t.workflow_status IN ('QUEUED', 'SCHEDULING', 'EXECUTING')))",
        ))
    } else {
        update
    }
}

impl Store {
    /// Applies workers' outcomes in one transaction (batched completion), each guarded by the
    /// task's lease and running status. Returns the rows that changed; an outcome whose claim
    /// was lost meanwhile (rescued, abandoned) changes nothing and is absent.
    pub async fn task_finish_many_if_running(
        &self,
        finishes: &[Finish],
        now: DateTime<Utc>,
        node_id: &str,
    ) -> Result<Vec<Task>, QueueError> {
        if finishes.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.begin_write().await?;
        let mut changed = Vec::with_capacity(finishes.len());
        // Completions all set the same columns: one statement for all of them.
        let (completions, others): (Vec<&Finish>, Vec<&Finish>) = finishes
            .iter()
            .partition(|finish| finish.transition == Transition::Complete);
        for chunk in completions.chunks(history::INSERT_CHUNK) {
            let claims = chunk.iter().map(|f| (f.task_id, f.lease_version));
            let update = set_transition(
                task::Entity::update_many(),
                &Transition::Complete,
                now,
                node_id,
            )
            .filter(held_by_lease(self.backend, claims));
            changed.extend(
                guarded(update, &Transition::Complete)
                    .exec_with_returning(&*txn)
                    .await?,
            );
        }
        for finish in others {
            let update = set_transition(
                task::Entity::update_many(),
                &finish.transition,
                now,
                node_id,
            )
            .filter(Column::Id.eq(finish.task_id))
            .filter(Column::LeaseVersion.eq(finish.lease_version));
            changed.extend(
                guarded(update, &finish.transition)
                    .exec_with_returning(&*txn)
                    .await?,
            );
        }
        self.commit_transitions(txn, &changed, node_id, now).await?;
        Ok(changed)
    }

    /// Finishes a transaction that moved `changed`: their history entries (with each new
    /// `workflow_status_desc` as the detail), notifications for other nodes, a wake-up when
    /// a task went back to QUEUED, the commit, and the local events.
    pub(crate) async fn commit_transitions(
        &self,
        txn: WriteTransaction,
        changed: &[Task],
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<(), QueueError> {
        history::record(&*txn, changed, actor, now, |task| {
            task.workflow_status_desc.clone()
        })
        .await?;
        history::notify_remote(&*txn, self.origin(), changed).await?;
        let requeued = changed
            .iter()
            .any(|task| task.workflow_status == TaskStatus::Queued);
        if requeued {
            history::notify_wake(&*txn).await?;
        }
        txn.commit().await?;
        if requeued {
            self.notify_committed();
        }
        self.publish(changed);
        Ok(())
    }
}
