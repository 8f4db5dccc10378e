//! Writing a task's history and announcing changes to other nodes, inside the transaction
//! that made the change (so history and notifications exist exactly when the change does).

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, EntityTrait, Statement};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::entity::task_event;
use crate::state::TaskStatus;
use crate::task::{QueueEvent, Task};

/// PostgreSQL channel telling producers that runnable work appeared.
pub(crate) const WAKE_CHANNEL: &str = "bulkq_queue_wake";
/// PostgreSQL channel carrying [`RemoteEvents`] to the other nodes.
pub(crate) const EVENT_CHANNEL: &str = "bulkq_queue_event";

/// PostgreSQL refuses notification payloads of 8000 bytes or more; stay well below.
const PAYLOAD_LIMIT: usize = 7000;
/// Rows per multi-row INSERT, well inside both backends' bind-parameter limits.
pub(crate) const INSERT_CHUNK: usize = 500;

/// The payload of an [`EVENT_CHANNEL`] notification.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RemoteEvents {
    pub origin: Uuid,
    pub events: Vec<QueueEvent>,
}

/// Appends one history entry per task: it moved to its current status, with `message(task)`
/// as the detail.
pub(crate) async fn record<C: ConnectionTrait>(
    conn: &C,
    tasks: &[Task],
    actor: &str,
    now: DateTime<Utc>,
    message: impl Fn(&Task) -> Option<String>,
) -> Result<(), sea_orm::DbErr> {
    let entries = tasks
        .iter()
        .map(|task| entry(task, task.workflow_status, actor, now, message(task)));
    insert(conn, entries).await
}

/// Appends a claim's two history entries per task, claimed (SCHEDULING) and started
/// (EXECUTING): the claim's one UPDATE takes both steps at once.
pub(crate) async fn record_claim<C: ConnectionTrait>(
    conn: &C,
    tasks: &[Task],
    actor: &str,
    now: DateTime<Utc>,
) -> Result<(), sea_orm::DbErr> {
    let entries = tasks.iter().flat_map(|task| {
        [TaskStatus::Scheduling, TaskStatus::Executing]
            .map(|status| entry(task, status, actor, now, None))
    });
    insert(conn, entries).await
}

fn entry(
    task: &Task,
    status: TaskStatus,
    actor: &str,
    now: DateTime<Utc>,
    message: Option<String>,
) -> task_event::Model {
    task_event::Model {
        id: Uuid::now_v7(),
        task_id: task.id,
        occurred_date: now,
        status,
        attempt: task.attempt,
        message,
        actor: actor.to_owned(),
    }
}

/// Inserts history entries: on PostgreSQL all in one statement, on SQLite
/// [`INSERT_CHUNK`] rows per multi-row INSERT.
async fn insert<C: ConnectionTrait>(
    conn: &C,
    entries: impl Iterator<Item = task_event::Model>,
) -> Result<(), sea_orm::DbErr> {
    // Collected before the first await: the caller's iterator borrows its tasks, and held
    // across an await it would make the future `Send` only for one particular lifetime.
    let mut entries: Vec<_> = entries.collect();
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

/// On PostgreSQL, queues notifications of these changes for the other nodes; they are
/// delivered when (and only if) the transaction commits. No-op on SQLite, whose only node
/// is this process.
pub(crate) async fn notify_remote<C: ConnectionTrait>(
    conn: &C,
    origin: Uuid,
    tasks: &[Task],
) -> Result<(), sea_orm::DbErr> {
    if conn.get_database_backend() != DbBackend::Postgres || tasks.is_empty() {
        return Ok(());
    }
    let mut batch = RemoteEvents {
        origin,
        events: Vec::new(),
    };
    let mut size = 0;
    for task in tasks {
        let event = QueueEvent::from(task);
        let event_size = serde_json::to_string(&event).map_or(0, |json| json.len() + 1);
        if size + event_size > PAYLOAD_LIMIT && !batch.events.is_empty() {
            pg_notify(conn, EVENT_CHANNEL, &batch).await?;
            batch.events.clear();
            size = 0;
        }
        size += event_size;
        batch.events.push(event);
    }
    pg_notify(conn, EVENT_CHANNEL, &batch).await
}

/// On PostgreSQL, wakes every node's producer once the transaction commits.
pub(crate) async fn notify_wake<C: ConnectionTrait>(conn: &C) -> Result<(), sea_orm::DbErr> {
    if conn.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    pg_notify(conn, WAKE_CHANNEL, &"").await
}

async fn pg_notify<C: ConnectionTrait, T: Serialize>(
    conn: &C,
    channel: &str,
    payload: &T,
) -> Result<(), sea_orm::DbErr> {
    let payload = serde_json::to_string(payload)
        .map_err(|error| sea_orm::DbErr::Custom(error.to_string()))?;
    conn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_notify($1, $2)",
        [channel.into(), payload.into()],
    ))
    .await?;
    Ok(())
}
