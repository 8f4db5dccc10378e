//! What a node does with the tasks it runs: claim them, start them, checkpoint them, and
//! check that it still holds them. Every write after the claim is guarded by the lease.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Condition, Expr, ExprTrait, IntoIden, Query, TableRef};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, QueryFilter,
    QuerySelect, Statement,
};
use uuid::Uuid;

use super::entity::task::{self, Column};
use super::quotas::{self, DueOwner};
use super::{INSERT_CHUNK, Store, announce, dialect};
use crate::error::QueueError;
use crate::state::TaskStatus;
use crate::task::Task;

/// Input of [`Store::task_get_available`].
#[derive(Debug, Clone, Copy)]
pub struct TaskGetAvailableParams<'a> {
    /// At most this many tasks: the executor slots free right now.
    pub max: u32,
    pub now: DateTime<Utc>,
    /// Recorded as `scheduled_by_process`.
    pub node_id: &'a str,
    /// Whether owners take turns (`RuntimeConfig::owners_take_turns`).
    pub take_turns: bool,
    /// The owners with tasks on the node (running or held), and how many each: a turn
    /// counts them.
    pub on_node: &'a [(Uuid, i64)],
}

#[derive(FromQueryResult)]
struct NextRunAt {
    run_at: Option<DateTime<Utc>>,
}

#[derive(FromQueryResult)]
struct OwnerWaiting {
    owner_id: Uuid,
    priority: Option<i32>,
    first_due: Option<DateTime<Utc>>,
}

impl OwnerWaiting {
    /// The owner as a claim taking turns sees it, if it has due tasks.
    fn due(&self) -> Option<DueOwner> {
        Some(DueOwner {
            owner_id: self.owner_id,
            priority: self.priority?,
            first_due: self.first_due?,
        })
    }
}

impl Store {
    /// Claims up to `max` due tasks for `node_id`, in priority then FIFO order, and starts
    /// them: QUEUED → EXECUTING (attempt and lease bumped) in one UPDATE, which on
    /// PostgreSQL also announces them to the other nodes, so a claim is one statement and
    /// one round trip. The node starts every task it claims at once (or holds it for its
    /// next free slot), so a separate start would only cost another statement per claim;
    /// the history shows both steps, claimed (SCHEDULING) and started (EXECUTING), from
    /// the row (see `history`).
    pub async fn task_get_available(
        &self,
        params: TaskGetAvailableParams<'_>,
    ) -> Result<Vec<Task>, QueueError> {
        if params.max == 0 {
            return Ok(Vec::new());
        }
        let mut started = match self.backend {
            DbBackend::Postgres => {
                let statement = self.claim_statement(params);
                self.run_alone(announce::announcing(statement, self.events().origin()))
                    .await?
            }
            _ => self.claim_sqlite(params).await?,
        };
        self.events().publish(&started);
        in_turn_order(&mut started, params);
        Ok(started)
    }

    /// SQLite's claim: starts the tasks and takes their entries off `queue_ready`, in one
    /// write transaction and one command (see [`dialect::SQLITE_CLAIM`]). Taking turns, the
    /// owners with due tasks are read first in the same transaction (nothing else writes
    /// before it commits), and while more than one has any the claim takes each one's
    /// first due tasks up to its quota ([`quotas::quotas`], [`dialect::sqlite_quota_claim`]).
    ///
    /// It commits even when it started nothing: the take may have removed a stale entry
    /// (one whose task was not QUEUED), and a write transaction that changed nothing
    /// commits without writing.
    async fn claim_sqlite(
        &self,
        params: TaskGetAvailableParams<'_>,
    ) -> Result<Vec<Task>, QueueError> {
        let txn = self.begin_write().await?;
        let due_owners = match params.take_turns {
            true => self.owners_waiting_in(&*txn, params.now).await?,
            false => Vec::new(),
        };
        let due_owners: Vec<DueOwner> = due_owners.iter().filter_map(OwnerWaiting::due).collect();
        let claim = match due_owners.as_slice() {
            [] | [_] => Statement::from_sql_and_values(
                self.backend,
                dialect::SQLITE_CLAIM,
                [
                    params.now.into(),
                    params.node_id.into(),
                    i64::from(params.max).into(),
                ],
            ),
            _ => {
                let quotas = quotas::quotas(
                    &due_owners,
                    params.on_node,
                    params.max,
                    dialect::SQLITE_MOST_OWNERS_PER_CLAIM,
                );
                let mut values = vec![params.now.into(), params.node_id.into()];
                for (owner, quota) in &quotas {
                    values.extend([(*owner).into(), (*quota).into()]);
                }
                let sql = dialect::sqlite_quota_claim(quotas.len());
                Statement::from_sql_and_values(self.backend, sql, values)
            }
        };
        let started = Task::find_by_statement(claim).all(&*txn).await?;
        txn.commit().await?;
        Ok(started)
    }

    /// The owners with due tasks of unpaused components, each with the highest priority of
    /// those tasks: whose work waits while a node's slots are all busy.
    pub async fn task_owners_waiting(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<(Uuid, i32)>, QueueError> {
        let rows = self.owners_waiting_in(&self.db, now).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| Some((row.owner_id, row.priority?)))
            .collect())
    }

    /// Every owner with queued tasks and its first due one, read on `conn`.
    async fn owners_waiting_in<C: ConnectionTrait>(
        &self,
        conn: &C,
        now: DateTime<Utc>,
    ) -> Result<Vec<OwnerWaiting>, QueueError> {
        let rows = OwnerWaiting::find_by_statement(Statement::from_sql_and_values(
            self.backend,
            dialect::owners_waiting(self.backend),
            [now.into()],
        ))
        .all(conn)
        .await?;
        Ok(rows)
    }

    /// PostgreSQL's claim, taking turns or not: with turns, the owners' tasks on the node go
    /// as two arrays.
    fn claim_statement(&self, params: TaskGetAvailableParams<'_>) -> Statement {
        let mut values = vec![
            params.now.into(),
            params.node_id.into(),
            i64::from(params.max).into(),
        ];
        let sql = match params.take_turns {
            false => dialect::POSTGRES_CLAIM,
            true => {
                let (owners, tasks): (Vec<Uuid>, Vec<i64>) = params.on_node.iter().copied().unzip();
                values.extend([owners.into(), tasks.into()]);
                dialect::POSTGRES_FAIR_CLAIM
            }
        };
        Statement::from_sql_and_values(self.backend, sql, values)
    }

    /// The earliest `run_at` of a queued task of an unpaused component.
    pub async fn task_next_run_at(&self) -> Result<Option<DateTime<Utc>>, QueueError> {
        let next = NextRunAt::find_by_statement(Statement::from_string(
            self.backend,
            dialect::task_next_run_at(self.backend),
        ))
        .one(&self.db)
        .await?;
        Ok(next.and_then(|row| row.run_at))
    }

    /// Within the executor's batch transaction: stores the checkpoint and progress if the
    /// task is still EXECUTING under `lease_version`. `false` means the claim is lost (rescued
    /// or abandoned) and the caller must roll back.
    pub(crate) async fn task_checkpoint_if_executing<C: ConnectionTrait>(
        &self,
        conn: &C,
        task_id: Uuid,
        lease_version: i64,
        checkpoint: &Checkpoint,
        now: DateTime<Utc>,
    ) -> Result<Option<Task>, QueueError> {
        let mut update = task::Entity::update_many()
            .col_expr(
                Column::ExecutionState,
                Expr::value(checkpoint.state.clone()),
            )
            .col_expr(Column::ModifiedDate, Expr::value(now));
        if let Some(done) = checkpoint.progress_done {
            update = update.col_expr(Column::ProgressDone, Expr::value(done));
        }
        if let Some(total) = checkpoint.progress_total {
            update = update.col_expr(Column::ProgressTotal, Expr::value(total));
        }
        let update = update
            .filter(Column::Id.eq(task_id))
            .filter(Column::LeaseVersion.eq(lease_version))
            .filter(Column::WorkflowStatus.eq(TaskStatus::Executing));
        Ok(self.update_tasks(conn, update).await?.pop())
    }

    /// Of the given `(id, lease_version)` claims, the ids this node still holds.
    pub async fn task_get_held(&self, claims: &[(Uuid, i64)]) -> Result<Vec<Uuid>, QueueError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let mut held = Vec::with_capacity(claims.len());
        for chunk in claims.chunks(INSERT_CHUNK) {
            let claims = ClaimMatch::new(self.backend, chunk.iter().copied());
            let mut select = task::Entity::find()
                .select_only()
                .column(Column::Id)
                .filter(claims.condition);
            if let Some(from) = claims.from {
                QuerySelect::query(&mut select).from(from);
            }
            let ids: Vec<Uuid> = select.into_tuple().all(&self.db).await?;
            held.extend(ids);
        }
        Ok(held)
    }
}

/// Claimed tasks in the order the claim chose them, which RETURNING does not keep: by
/// priority, then (when owners take turns) turn, then age. A turn is the owner's tasks on
/// the node plus the task's place among the owner's claimed ones at its priority, as the
/// claim counts it among the owner's first due ones, of which the claimed are the first.
fn in_turn_order(tasks: &mut [Task], params: TaskGetAvailableParams<'_>) {
    tasks.sort_by(|a, b| {
        (b.priority.cmp(&a.priority))
            .then(a.run_at.cmp(&b.run_at))
            .then(a.id.cmp(&b.id))
    });
    if !params.take_turns {
        return;
    }
    let mut places: HashMap<(Uuid, i32), i64> = HashMap::new();
    let turns: HashMap<Uuid, i64> = tasks
        .iter()
        .map(|task| {
            let place = places.entry((task.owner_id, task.priority)).or_default();
            *place += 1;
            let on_node = params
                .on_node
                .iter()
                .find(|(owner, _)| *owner == task.owner_id)
                .map_or(0, |(_, tasks)| *tasks);
            (task.id, *place + on_node)
        })
        .collect();
    // Stable: equal turns keep their age order.
    tasks.sort_by_key(|task| (std::cmp::Reverse(task.priority), turns[&task.id]));
}

/// What a batch commits besides the executor's own writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The new `execution_state`: where the next batch (or the next attempt) resumes.
    pub state: serde_json::Value,
    /// The new `progress_done`, if it changed.
    pub progress_done: Option<i64>,
    /// The new `progress_total`, if it is known now.
    pub progress_total: Option<i64>,
}

/// How a statement finds the rows of a list of `(id, lease_version)` claims: the rows that
/// still carry the lease their claim took. Every change of `workflow_status` (a claim, any
/// [`crate::state::Transition`]) bumps `lease_version`, so such a row is still EXECUTING
/// under that claim, and no status test is needed beside it.
///
/// SQLite: `(id = ? AND lease_version = ?) OR …`, one primary-key lookup per claim.
///
/// PostgreSQL: a join with the claims as two array parameters (`FROM (SELECT
/// unnest($1::uuid[]) …) AS claim`), so a batch is one prepared statement whatever its
/// size, and its generic plan looks each claim up in the primary key: an array
/// parameter's length is estimated small, so the claims drive a nested loop. Written as a
/// semi-join (`(id, lease_version) IN (SELECT * FROM unnest(…))`), or next to a test of
/// `workflow_status`, the planner started from the status index instead (statistics say
/// next to nothing is EXECUTING) and compared every running task with every claim, so a
/// batch of completions cost time in proportion to the tasks running (ADR 0008).
pub(crate) struct ClaimMatch {
    /// The claims as a table, to add to the statement's FROM (PostgreSQL only).
    pub from: Option<TableRef>,
    /// Restricts `queue_task` to the claimed rows.
    pub condition: Condition,
}

/// The alias of [`ClaimMatch::from`] and its columns, distinct from `queue_task`'s so
/// unqualified column names in SET and RETURNING stay unambiguous.
const CLAIM: &str = "claim";
const CLAIMED_ID: &str = "claimed_id";
const CLAIMED_LEASE: &str = "claimed_lease";

impl ClaimMatch {
    pub(crate) fn new(backend: DbBackend, claims: impl IntoIterator<Item = (Uuid, i64)>) -> Self {
        match backend {
            DbBackend::Postgres => {
                let (ids, leases): (Vec<Uuid>, Vec<i64>) = claims.into_iter().unzip();
                let table = Query::select()
                    .expr_as(
                        Expr::cust_with_values("unnest($1::uuid[])", [ids]),
                        CLAIMED_ID,
                    )
                    .expr_as(
                        Expr::cust_with_values("unnest($1::int8[])", [leases]),
                        CLAIMED_LEASE,
                    )
                    .to_owned();
                Self {
                    from: Some(TableRef::SubQuery(Box::new(table), CLAIM.into_iden())),
                    condition: Condition::all()
                        .add(Expr::col((task::Entity, Column::Id)).equals((CLAIM, CLAIMED_ID)))
                        .add(
                            Expr::col((task::Entity, Column::LeaseVersion))
                                .equals((CLAIM, CLAIMED_LEASE)),
                        ),
                }
            }
            _ => Self {
                from: None,
                condition: claims
                    .into_iter()
                    .fold(Condition::any(), |any, (id, lease)| {
                        any.add(Column::Id.eq(id).and(Column::LeaseVersion.eq(lease)))
                    }),
            },
        }
    }
}

impl Checkpoint {
    /// A checkpoint that only moves the executor's state.
    pub fn new(state: serde_json::Value) -> Self {
        Self {
            state,
            progress_done: None,
            progress_total: None,
        }
    }

    /// Also sets `progress_done`.
    pub fn with_progress(mut self, done: i64) -> Self {
        self.progress_done = Some(done);
        self
    }

    /// Also sets `progress_total`.
    pub fn with_total(mut self, total: i64) -> Self {
        self.progress_total = Some(total);
        self
    }
}
