//! A task's history: what the task row cannot show, stored by the transaction that made the
//! change, and the rest read off the row.
//!
//! The row itself keeps its creation (`created_date`, `created_by`), its latest claim
//! (`scheduling_started_date`, `execution_started_date`, `scheduled_by_process`, `attempt`)
//! and, once completed, its completion (`workflow_stopped_date`, `modified_by`). So the
//! path nearly every task takes, enqueue → claim → complete, stores no history at all: it
//! would be three or four extra rows per task, the largest part of the database's work for
//! a queue of short tasks. Every other transition stores its own entry, and one that ends
//! a claim other than by completing it (a retry, a failure, a hand-back, a rescue, an
//! abandon of running work) first stores that claim's two entries, because the next claim
//! overwrites the row's copy of them. [`with_implied`] puts the two halves back together.

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, Statement};
use uuid::Uuid;

use super::INSERT_CHUNK;
use super::entity::task_event;
use crate::state::TaskStatus;
use crate::task::{Task, TaskEvent};

/// The entries to store for one transition of `task` (its row after the transition): the
/// claim it ended, if it ended one (`ended_claim`: the attempt that claim ran under), then
/// the transition itself, with the row's `workflow_status_desc` as the detail.
pub(crate) fn transition_entries(
    task: &Task,
    ended_claim: Option<i32>,
    actor: &str,
    now: DateTime<Utc>,
) -> Vec<task_event::Model> {
    let mut entries = Vec::with_capacity(3);
    if let Some(attempt) = ended_claim {
        entries.extend(claim_entries(task, attempt));
    }
    entries.push(entry(
        task.id,
        now,
        task.workflow_status,
        task.attempt,
        task.workflow_status_desc.clone(),
        actor,
    ));
    entries
}

/// The claim the row records, as history entries: claimed (SCHEDULING) and started
/// (EXECUTING), both by the claiming node. A claim is one UPDATE that takes both steps.
fn claim_entries(task: &Task, attempt: i32) -> Vec<task_event::Model> {
    let node = task.scheduled_by_process.as_deref().unwrap_or_default();
    [
        (TaskStatus::Scheduling, task.scheduling_started_date),
        (TaskStatus::Executing, task.execution_started_date),
    ]
    .into_iter()
    .filter_map(|(status, at)| at.map(|at| entry(task.id, at, status, attempt, None, node)))
    .collect()
}

/// The whole history of `task`: `stored` (oldest first) with the entries the row implies
/// and no stored entry records yet: its creation, its latest claim while that claim has not
/// ended otherwise than by completion, and its completion. An implied entry is left out
/// when a stored one has the same status and time (histories written before the row kept
/// these facts stored them all).
pub(crate) fn with_implied(task: Option<&Task>, stored: Vec<TaskEvent>) -> Vec<TaskEvent> {
    let Some(task) = task else { return stored };
    let recorded = |status: TaskStatus, at: DateTime<Utc>| {
        stored
            .iter()
            .any(|event| event.status == status && event.occurred_date == at)
    };
    let mut history = Vec::with_capacity(stored.len() + 4);
    if !recorded(TaskStatus::Queued, task.created_date) {
        history.push(entry(
            task.id,
            task.created_date,
            TaskStatus::Queued,
            0,
            None,
            &task.created_by,
        ));
    }
    let mut implied = Vec::new();
    let claim_open = matches!(
        task.workflow_status,
        TaskStatus::Scheduling | TaskStatus::Executing | TaskStatus::Completed
    );
    if claim_open
        && let Some(claimed) = task.scheduling_started_date
        && !recorded(TaskStatus::Scheduling, claimed)
    {
        implied.extend(claim_entries(task, task.attempt));
    }
    if task.workflow_status == TaskStatus::Completed
        && let Some(stopped) = task.workflow_stopped_date
        && !recorded(TaskStatus::Completed, stopped)
    {
        implied.push(entry(
            task.id,
            stopped,
            TaskStatus::Completed,
            task.attempt,
            None,
            &task.modified_by,
        ));
    }
    history.extend(stored);
    history.extend(implied);
    // Stable: entries of the same instant keep their order (a claim's two steps share one).
    history.sort_by_key(|event| event.occurred_date);
    history
}

fn entry(
    task_id: Uuid,
    at: DateTime<Utc>,
    status: TaskStatus,
    attempt: i32,
    message: Option<String>,
    actor: &str,
) -> task_event::Model {
    task_event::Model {
        // Monotonic within the process, so entries of the same instant (a claim's two
        // steps) sort in the order they were made.
        id: Uuid::now_v7(),
        task_id,
        occurred_date: at,
        status,
        attempt,
        message,
        actor: actor.to_owned(),
    }
}

/// Stores history entries: on PostgreSQL all in one statement, on SQLite [`INSERT_CHUNK`]
/// rows per multi-row INSERT.
pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    mut entries: Vec<task_event::Model>,
) -> Result<(), sea_orm::DbErr> {
    if conn.get_database_backend() == DbBackend::Postgres {
        return insert_json(conn, entries).await;
    }
    while !entries.is_empty() {
        let chunk: Vec<_> = entries
            .drain(..entries.len().min(INSERT_CHUNK))
            .map(task_event::ActiveModel::from)
            .collect();
        task_event::Entity::insert_many(chunk)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// PostgreSQL: one INSERT of every entry, passed as one JSON array parameter, so it is the
/// same prepared statement whatever the number of entries. (Array parameters would need
/// one per column, and the driver binds no NULL inside an array, which `message` has.)
/// The JSON keys are the model's field names, which are the column names; a renamed field
/// would leave its column NULL, and the NOT NULL columns would refuse the row.
async fn insert_json<C: ConnectionTrait>(
    conn: &C,
    rows: Vec<task_event::Model>,
) -> Result<(), sea_orm::DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    // Text, not a `serde_json::Value`: a tree of 20,000 entries would cost several times
    // the memory of their JSON.
    let rows =
        serde_json::to_string(&rows).map_err(|error| sea_orm::DbErr::Custom(error.to_string()))?;
    conn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "INSERT INTO queue_task_event \
         SELECT * FROM jsonb_populate_recordset(NULL::queue_task_event, $1::jsonb)",
        [rows.into()],
    ))
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::task::NewTask;

    fn at(second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, second).unwrap()
    }

    /// A task enqueued by "alice" at second 0.
    fn enqueued() -> Task {
        let task = NewTask::new("test.history", serde_json::json!({}), Uuid::nil())
            .with_created_by("alice");
        super::super::enqueue::new_row(task, at(0))
    }

    /// `task` claimed by `node` at `second`, under its next attempt.
    fn claimed(mut task: Task, node: &str, second: u32) -> Task {
        task.workflow_status = TaskStatus::Executing;
        task.attempt += 1;
        task.scheduling_started_date = Some(at(second));
        task.execution_started_date = Some(at(second));
        task.scheduled_by_process = Some(node.to_owned());
        task
    }

    /// `task` moved to `status` by `actor` at `second`, with `desc`.
    fn moved(mut task: Task, status: TaskStatus, actor: &str, second: u32, desc: &str) -> Task {
        task.workflow_status = status;
        task.workflow_status_desc = (!desc.is_empty()).then(|| desc.to_owned());
        task.modified_by = actor.to_owned();
        task.modified_date = at(second);
        if status.is_terminal() {
            task.workflow_stopped_date = Some(at(second));
        }
        task
    }

    fn summary(history: &[TaskEvent]) -> Vec<(TaskStatus, i32, u32, &str, Option<&str>)> {
        history
            .iter()
            .map(|event| {
                (
                    event.status,
                    event.attempt,
                    event.occurred_date.timestamp() as u32 % 60,
                    event.actor.as_str(),
                    event.message.as_deref(),
                )
            })
            .collect()
    }

    use TaskStatus::{Abandoned, Completed, Executing, Queued, Scheduling};

    #[test]
    fn the_happy_path_is_read_off_the_row() {
        let task = enqueued();
        assert_eq!(
            summary(&with_implied(Some(&task), Vec::new())),
            [(Queued, 0, 0, "alice", None)]
        );
        let task = claimed(task, "node-a", 5);
        assert_eq!(
            summary(&with_implied(Some(&task), Vec::new())),
            [
                (Queued, 0, 0, "alice", None),
                (Scheduling, 1, 5, "node-a", None),
                (Executing, 1, 5, "node-a", None),
            ]
        );
        let task = moved(task, Completed, "node-a", 9, "");
        assert_eq!(
            summary(&with_implied(Some(&task), Vec::new())),
            [
                (Queued, 0, 0, "alice", None),
                (Scheduling, 1, 5, "node-a", None),
                (Executing, 1, 5, "node-a", None),
                (Completed, 1, 9, "node-a", None),
            ]
        );
    }

    #[test]
    fn a_retried_claim_is_stored_and_the_next_one_implied() {
        let first = claimed(enqueued(), "node-a", 5);
        let retried = moved(first, Queued, "node-a", 7, "blip");
        let stored = transition_entries(&retried, Some(1), "node-a", at(7));
        let done = moved(claimed(retried, "node-b", 8), Completed, "node-b", 9, "");
        assert_eq!(
            summary(&with_implied(Some(&done), stored)),
            [
                (Queued, 0, 0, "alice", None),
                (Scheduling, 1, 5, "node-a", None),
                (Executing, 1, 5, "node-a", None),
                (Queued, 1, 7, "node-a", Some("blip")),
                (Scheduling, 2, 8, "node-b", None),
                (Executing, 2, 8, "node-b", None),
                (Completed, 2, 9, "node-b", None),
            ]
        );
    }

    #[test]
    fn a_queued_task_abandoned_after_a_retry_implies_no_claim() {
        let retried = moved(
            claimed(enqueued(), "node-a", 5),
            Queued,
            "node-a",
            7,
            "blip",
        );
        let mut stored = transition_entries(&retried, Some(1), "node-a", at(7));
        let abandoned = moved(retried, Abandoned, "admin", 9, "abandoned by admin: no");
        stored.extend(transition_entries(&abandoned, None, "admin", at(9)));
        let history = with_implied(Some(&abandoned), stored);
        assert_eq!(
            summary(&history).last(),
            Some(&(Abandoned, 1, 9, "admin", Some("abandoned by admin: no")))
        );
        assert_eq!(history.len(), 5, "{:?}", summary(&history));
    }

    #[test]
    fn histories_stored_whole_are_not_doubled() {
        let task = moved(claimed(enqueued(), "node-a", 5), Completed, "node-a", 9, "");
        let stored = vec![
            entry(task.id, at(0), Queued, 0, None, "alice"),
            entry(task.id, at(5), Scheduling, 1, None, "node-a"),
            entry(task.id, at(5), Executing, 1, None, "node-a"),
            entry(task.id, at(9), Completed, 1, None, "node-a"),
        ];
        assert_eq!(with_implied(Some(&task), stored.clone()), stored);
    }

    #[test]
    fn a_missing_task_has_only_its_stored_history() {
        assert!(with_implied(None, Vec::new()).is_empty());
    }
}
