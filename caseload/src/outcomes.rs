//! Each person's outcome in each bulk task (ADR 0080). The batch that decides an outcome
//! records it in its own transaction, beside the change and the task's checkpoint, so a
//! crash neither loses one nor records one twice. The task's owner reads them back as a
//! CSV file; the task explorer finds by them the tasks that touched a person; they are
//! forgotten once their task has been pruned.

use std::time::Duration;

use bulkq_types::actions::ActionKind;
use bulkq_types::outcomes::PersonOutcome;
use queue::{ListedIn, PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::BatchReport;
use crate::export::{csv_lines, defuse_formula};
use crate::store::outcomes as rows;

/// The periodic job that forgets the outcomes of pruned tasks.
pub const OUTCOME_CLEANUP_JOB: &str = "caseload.outcome_cleanup";
/// How often it looks: pruned tasks' outcomes are only dead weight, never wrong.
const CLEANUP_EVERY: Duration = Duration::from_secs(3600);
/// Rows deleted per transaction, so a million-person task never holds the writer long.
const DELETED_PER_TRANSACTION: u64 = 10_000;

/// Records every person of a batch's report of a `kind` task: changed, unchanged, out of
/// scope, unknown; the changed only where no history of the kind names them already.
pub async fn record_batch<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    kind: ActionKind,
    report: &BatchReport,
) -> Result<(), CaseloadError> {
    let changes_kept = rows::change_history(kind).is_some();
    for (outcome, people) in report.outcomes() {
        if !(changes_kept && outcome == PersonOutcome::Changed) {
            record(db, task_id, outcome, people).await?;
        }
    }
    Ok(())
}

/// Records `outcome` for `people` in task `task_id`, replacing what was recorded before.
pub async fn record<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    outcome: PersonOutcome,
    people: &[Uuid],
) -> Result<(), CaseloadError> {
    rows::record(db, task_id, outcome, people).await
}

/// One person's outcome in a task, as its owner reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeLine {
    pub person_id: Uuid,
    /// The person's school id and name; `None` for an id that named nobody.
    pub person: Option<(String, String)>,
    pub outcome: PersonOutcome,
}

/// Up to `limit` outcomes of task `task_id` (a `kind` action) after person `after`, in
/// person id order.
pub async fn page<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    kind: ActionKind,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<OutcomeLine>, CaseloadError> {
    let found = rows::page(db, task_id, kind, after, limit).await?;
    found
        .into_iter()
        .map(|row| {
            let outcome = PersonOutcome::from_code(row.outcome).ok_or_else(|| {
                CaseloadError::Invalid(format!("unknown outcome code {}", row.outcome))
            })?;
            let person = match (row.school_id, row.first_name, row.last_name) {
                (Some(school_id), Some(first), Some(last)) => {
                    Some((school_id, format!("{first} {last}")))
                }
                _ => None,
            };
            Ok(OutcomeLine {
                person_id: row.person_id,
                person,
                outcome,
            })
        })
        .collect()
}

/// The first line of a task's outcomes CSV.
pub const CSV_HEADER: &[u8] = b"school_id,name,outcome,meaning,person_id\n";
/// Outcomes per CSV page: a million-person task streams in a thousand reads by key.
const CSV_PAGE_ROWS: u64 = 2_000;

/// One page of the CSV of task `task_id` (a `kind` action), after person `after` (`None`
/// for the first): the lines and the last person, or `None` when none are left. An
/// unknown id's school id and name are empty.
pub async fn csv_page<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    kind: ActionKind,
    after: Option<Uuid>,
) -> Result<Option<(Vec<u8>, Uuid)>, CaseloadError> {
    let lines = page(db, task_id, kind, after, CSV_PAGE_ROWS).await?;
    let Some(last) = lines.last().map(|line| line.person_id) else {
        return Ok(None);
    };
    let csv = csv_lines(lines.into_iter().map(|line| {
        let (school_id, name) = line.person.unwrap_or_default();
        [
            defuse_formula(school_id),
            defuse_formula(name),
            line.outcome.as_str().to_owned(),
            line.outcome.meaning(kind).to_owned(),
            line.person_id.to_string(),
        ]
    }))?;
    Ok(Some((csv, last)))
}

/// The tasks that recorded an outcome for `person_id`, as the task explorer's filter.
pub fn tasks_touching(person_id: Uuid) -> ListedIn {
    rows::tasks_touching(person_id)
}

/// The job that forgets the outcomes of tasks the queue has pruned, on one node at a time.
pub fn outcome_cleanup_job() -> PeriodicJob {
    PeriodicJob::new(
        OUTCOME_CLEANUP_JOB,
        Schedule::Every(CLEANUP_EVERY),
        OutcomeCleanup,
    )
    .with_lock_at_least_half_of(CLEANUP_EVERY)
}

struct OutcomeCleanup;

#[async_trait::async_trait]
impl PeriodicTask for OutcomeCleanup {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let deleted = forget_pruned(&ctx.store).await.map_err(|e| e.to_string())?;
        if deleted > 0 {
            tracing::info!(deleted, "forgot the outcomes of pruned tasks");
        }
        Ok(())
    }
}

/// Deletes the outcomes of every task that no longer exists; answers how many.
pub async fn forget_pruned(store: &queue::Store) -> Result<u64, CaseloadError> {
    let mut deleted = 0;
    let mut after = None;
    while let Some(task_id) = rows::next_task(store.db(), after).await? {
        after = Some(task_id);
        if store.task_exists(task_id).await? {
            continue;
        }
        loop {
            let txn = store.begin_write().await?;
            let count = rows::delete_some(&*txn, task_id, DELETED_PER_TRANSACTION).await?;
            txn.commit().await?;
            deleted += count;
            if count < DELETED_PER_TRANSACTION {
                break;
            }
        }
    }
    Ok(deleted)
}
