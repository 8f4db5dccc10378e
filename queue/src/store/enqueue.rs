//! Enqueueing inside the caller's transaction.
//!
//! The insert joins whatever transaction the caller passes, so a task exists exactly when the
//! caller's own writes do: rolled back, it never existed; committed, it is runnable. Wake-ups
//! follow the same rule. On PostgreSQL a `pg_notify` is queued in the same transaction, which
//! the server delivers only on commit. SQLite has no such thing, so the in-process producers
//! must be woken after the commit: [`QueueTransaction`] does that in its `commit`, which is
//! why it is the recommended way to enqueue (a caller cannot forget a step it never takes).

use std::ops::Deref;

use chrono::SubsecRound;

use sea_orm::sea_query::{Alias, Expr, OnConflict};
use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, EntityTrait, QueryFilter, Statement,
    TryInsertResult,
};
use uuid::Uuid;

use super::entity::task::{self, ActiveModel};
use super::{INSERT_CHUNK, Store, WriteClass, WriteTransaction, announce};
use crate::error::QueueError;
use crate::state::TaskStatus;
use crate::task::{MAX_ATTEMPTS_DEFAULT, NewTask, QueueEvent, Task};

/// The column holding a task's `unique_key` while the task is active (NULL after), derived
/// before the row is inserted, under a unique index: the `ON CONFLICT` arbiter of an
/// enqueue with a key (see `m20261124_000080_hot_updates` and, on PostgreSQL,
/// `m20261128_000160_derived_columns_kept_by_triggers`).
const ACTIVE_UNIQUE_KEY: &str = "active_unique_key";
/// The predicate of that partial index, spelled as in the migration: PostgreSQL picks the
/// arbiter by matching it.
const ACTIVE_UNIQUE_KEY_PREDICATE: &str = "active_unique_key IS NOT NULL";

impl Store {
    /// Inserts `task` within `conn` (a transaction or a plain connection) and returns its row.
    ///
    /// With a `unique_key` that an active task already holds, returns that task instead.
    /// After your commit, call [`Store::notify_enqueued`] with the returned rows (on SQLite
    /// nothing else wakes the producers), or use [`Store::begin_queue`], which does it for you.
    #[tracing::instrument(
        name = "enqueue",
        level = "debug",
        skip_all,
        fields(component = %task.component, task = tracing::field::Empty)
    )]
    pub async fn enqueue<C: ConnectionTrait>(
        &self,
        conn: &C,
        task: NewTask,
    ) -> Result<Task, QueueError> {
        let row = self
            .enqueue_many(conn, vec![task])
            .await?
            .pop()
            .ok_or_else(|| QueueError::Invalid("enqueue returned no row".to_owned()))?;
        tracing::Span::current().record("task", tracing::field::display(row.id));
        Ok(row)
    }

    /// Inserts many tasks within `conn` and returns their rows in the same order; tasks
    /// without a unique key go in with multi-row INSERTs. The rows are built once and each
    /// chunk's statement is built from them when it goes, so a large call holds its tasks
    /// once (and one chunk's statement), not once per step.
    #[tracing::instrument(name = "enqueue_many", level = "debug", skip_all, fields(tasks = tasks.len()))]
    pub async fn enqueue_many<C: ConnectionTrait>(
        &self,
        conn: &C,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<Task>, QueueError> {
        let now = self.clock.now();
        let mut rows: Vec<Task> = tasks.into_iter().map(|task| new_row(task, now)).collect();
        let mut inserted_any = false;
        let plain: Vec<&Task> = rows.iter().filter(|row| row.unique_key.is_none()).collect();
        match self.backend {
            DbBackend::Postgres => {
                for chunk in plain.chunks(UNNEST_CHUNK) {
                    conn.execute_raw(unnest_insert(chunk, now.trunc_subsecs(6)))
                        .await?;
                }
            }
            _ => {
                for chunk in plain.chunks(INSERT_CHUNK) {
                    let models = chunk.iter().map(|row| ActiveModel::from((*row).clone()));
                    task::Entity::insert_many(models)
                        .exec_without_returning(conn)
                        .await?;
                }
            }
        }
        inserted_any |= !plain.is_empty();
        for row in rows.iter_mut().filter(|row| row.unique_key.is_some()) {
            if insert_unless_active(conn, row).await? {
                inserted_any = true;
            } else {
                *row = active_with_key(conn, row).await?;
            }
        }

        // No history entry: the row itself records its creation (see `history`).
        if inserted_any {
            announce::notify_wake(conn).await?;
        }
        Ok(rows)
    }

    /// Starts a [`QueueTransaction`]: a write transaction that wakes the producers and
    /// announces its enqueued tasks when it commits. On SQLite it holds this store's write
    /// slot until it ends (see [`Store::begin_write_as`]), so keep it short and make no other
    /// queue writes (admin operations, a second `begin_queue`) while it is open. This one is
    /// someone's submission: it takes the slot ahead of background work, and it counts as
    /// a person writing.
    pub async fn begin_queue(&self) -> Result<QueueTransaction, QueueError> {
        self.begin_queue_as(WriteClass::Interactive).await
    }

    /// [`Store::begin_queue`] for `class`: work nobody waits for (a periodic job's) begins
    /// as `Background`, so that it neither goes ahead of people nor makes bulk work yield
    /// as if someone were writing.
    pub async fn begin_queue_as(&self, class: WriteClass) -> Result<QueueTransaction, QueueError> {
        Ok(QueueTransaction {
            txn: self.begin_write_as(class).await?,
            store: self.clone(),
            enqueued: Vec::new(),
        })
    }
}

/// Tasks per `UNNEST` insert on PostgreSQL: one statement, eleven array parameters, however
/// many rows; the chunk only bounds one statement's memory on both sides.
const UNNEST_CHUNK: usize = 5_000;

/// PostgreSQL's insert of many tasks without a unique key: each column's values bound as one
/// array and turned back into rows by `UNNEST`, so a bulk enqueue is one statement, planned
/// once, rather than a statement of 500 rows' worth of parameters per 500 tasks. The
/// columns every new task shares are written once.
const UNNEST_INSERT: &str = "INSERT INTO queue_task (id, created_date, created_by, \
     modified_date, modified_by, owner_id, run_as_id, execution_component_name, \
     execution_spec, execution_state, workflow_status, run_at, priority, attempt, \
     max_attempts, progress_done, progress_total, lease_version, crash_count) \
     SELECT t.id, $1, t.created_by, $1, t.created_by, t.owner_id, t.run_as_id, t.component, \
     t.spec::json, '{}'::json, 'QUEUED', t.run_at, t.priority, 0, t.max_attempts, 0, \
     CASE WHEN t.counted THEN t.total END, 0, 0 \
     FROM UNNEST($2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::text[], $7::text[], \
     $8::timestamptz[], $9::int4[], $10::int4[], $11::bool[], $12::int8[]) \
     AS t(id, created_by, owner_id, run_as_id, component, spec, run_at, priority, \
     max_attempts, counted, total)";

/// [`UNNEST_INSERT`] for `rows`, all created at `now`. The spec goes as its JSON text, so
/// the stored text is the one the multi-row insert would store. Array elements cannot be
/// NULL here, so a missing total is `counted = false`.
fn unnest_insert(rows: &[&Task], now: chrono::DateTime<chrono::Utc>) -> Statement {
    fn column<T>(rows: &[&Task], f: impl Fn(&Task) -> T) -> sea_orm::Value
    where
        Vec<T>: Into<sea_orm::Value>,
    {
        rows.iter().map(|row| f(row)).collect::<Vec<T>>().into()
    }
    let values = vec![
        now.into(),
        column(rows, |row| row.id),
        column(rows, |row| row.created_by.clone()),
        column(rows, |row| row.owner_id),
        column(rows, |row| row.run_as_id),
        column(rows, |row| row.execution_component_name.clone()),
        column(rows, |row| row.execution_spec.to_string()),
        column(rows, |row| row.run_at),
        column(rows, |row| row.priority),
        column(rows, |row| row.max_attempts),
        column(rows, |row| row.progress_total.is_some()),
        column(rows, |row| row.progress_total.unwrap_or_default()),
    ];
    Statement::from_sql_and_values(DbBackend::Postgres, UNNEST_INSERT, values)
}

/// The row of a new task as it will be stored.
pub(super) fn new_row(task: NewTask, now: chrono::DateTime<chrono::Utc>) -> Task {
    // PostgreSQL keeps microseconds; rounding here makes the returned row equal the stored one.
    let now = now.trunc_subsecs(6);
    Task {
        // Time-ordered ids make FIFO ties (same priority and run_at) break by insertion.
        id: Uuid::now_v7(),
        created_date: now,
        created_by: task.created_by.clone(),
        modified_date: now,
        modified_by: task.created_by,
        owner_id: task.owner_id,
        run_as_id: task.run_as_id,
        execution_component_name: task.component,
        execution_spec: task.spec,
        execution_state: serde_json::json!({}),
        workflow_status: TaskStatus::Queued,
        workflow_status_desc: None,
        run_at: task.run_at.map_or(now, |at| at.trunc_subsecs(6)),
        priority: task.priority,
        attempt: 0,
        max_attempts: task.max_attempts.unwrap_or(MAX_ATTEMPTS_DEFAULT).max(1),
        unique_key: task.unique_key,
        scheduling_started_date: None,
        scheduled_by_process: None,
        execution_started_date: None,
        workflow_stopped_date: None,
        progress_done: 0,
        progress_total: task.progress_total,
        lease_version: 0,
        crash_count: 0,
    }
}

/// Inserts a task with a unique key unless an active task holds the key (`false` then).
/// `ON CONFLICT DO NOTHING` rather than catching the violation: on PostgreSQL a failed
/// statement would abort the caller's whole transaction.
async fn insert_unless_active<C: ConnectionTrait>(
    conn: &C,
    model: &Task,
) -> Result<bool, QueueError> {
    let result = task::Entity::insert(ActiveModel::from(model.clone()))
        .on_conflict(
            OnConflict::column(Alias::new(ACTIVE_UNIQUE_KEY))
                .target_and_where(Expr::cust(ACTIVE_UNIQUE_KEY_PREDICATE))
                .do_nothing()
                .to_owned(),
        )
        .try_insert()
        .exec_without_returning(conn)
        .await?;
    // `DO NOTHING` may report the conflict as zero rows inserted rather than `Conflicted`.
    Ok(matches!(result, TryInsertResult::Inserted(rows) if rows > 0))
}

/// The active task holding `model`'s unique key.
async fn active_with_key<C: ConnectionTrait>(conn: &C, model: &Task) -> Result<Task, QueueError> {
    use sea_orm::sea_query::ExprTrait as _;
    task::Entity::find()
        .filter(Expr::col(Alias::new(ACTIVE_UNIQUE_KEY)).eq(model.unique_key.clone()))
        .one(conn)
        .await?
        .ok_or_else(|| {
            QueueError::Invalid(format!(
                "unique key {:?} conflicted but no active task holds it",
                model.unique_key
            ))
        })
}

/// A write transaction for enqueueing together with the caller's own writes.
///
/// Use it like a `DatabaseTransaction` (it derefs to one) for your domain writes, enqueue with
/// [`QueueTransaction::enqueue`], and finish with [`QueueTransaction::commit`], which commits
/// and then wakes the producers and announces the new tasks. Dropping it rolls back.
pub struct QueueTransaction {
    txn: WriteTransaction,
    store: Store,
    /// Announced to subscribers once the commit has succeeded.
    enqueued: Vec<QueueEvent>,
}

impl QueueTransaction {
    pub async fn enqueue(&mut self, task: NewTask) -> Result<Task, QueueError> {
        let row = self.store.enqueue(&*self.txn, task).await?;
        self.enqueued.push(QueueEvent::from(&row));
        Ok(row)
    }

    /// Enqueues `task` unless a task with its `unique_key` exists in any status, and returns
    /// the task holding the key. [`QueueTransaction::enqueue`] sees a key only while its
    /// task is active; this is for keys that mean "once" for as long as the task is kept (a
    /// client's idempotency key, say). Calls with one key take turns: on PostgreSQL under a
    /// transaction-scoped advisory lock on the key, on SQLite under the write lock this
    /// transaction holds; so a concurrent call finds the first one's task even if that task
    /// has already finished.
    pub async fn enqueue_once(&mut self, task: NewTask) -> Result<Task, QueueError> {
        let Some(key) = task.unique_key.clone() else {
            return Err(QueueError::Invalid(
                "enqueue_once needs a task with a unique key".to_owned(),
            ));
        };
        if self.store.backend == DbBackend::Postgres {
            self.txn
                .execute_raw(Statement::from_sql_and_values(
                    DbBackend::Postgres,
                    "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                    [key.clone().into()],
                ))
                .await?;
        }
        match self.store.task_get_by_unique_key(&*self.txn, &key).await? {
            Some(earlier) => Ok(earlier),
            None => self.enqueue(task).await,
        }
    }

    pub async fn enqueue_many(&mut self, tasks: Vec<NewTask>) -> Result<Vec<Task>, QueueError> {
        let rows = self.store.enqueue_many(&*self.txn, tasks).await?;
        self.enqueued.extend(rows.iter().map(QueueEvent::from));
        Ok(rows)
    }

    /// Commits, then wakes this process's producers, announces the enqueued tasks and sends
    /// their wake-up hints, if configured ([`Store::notify_enqueued`]).
    pub async fn commit(self) -> Result<(), QueueError> {
        self.txn.commit().await?;
        self.store.notify_enqueued_events(&self.enqueued);
        Ok(())
    }

    pub async fn rollback(self) -> Result<(), QueueError> {
        Ok(self.txn.rollback().await?)
    }
}

impl Deref for QueueTransaction {
    type Target = DatabaseTransaction;

    fn deref(&self) -> &DatabaseTransaction {
        &self.txn
    }
}
