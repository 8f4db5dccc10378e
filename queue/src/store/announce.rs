//! PostgreSQL notifications: wake-ups for every node's producer, and word of changed tasks
//! for the other nodes' subscribers. Both are queued by the statement or transaction that
//! made the change, and the server delivers them only when (and only if) it commits. SQLite
//! needs none of this: its only node is this process, which wakes and publishes in-process
//! after commit.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, Statement};
use uuid::Uuid;

use super::entity::task::Column;
use crate::state::TaskStatus;
use crate::task::QueueEvent;

/// PostgreSQL channel telling producers that runnable work appeared.
pub(crate) const WAKE_CHANNEL: &str = "bulkq_queue_wake";
/// PostgreSQL channel carrying [`ChangedTasks`] to the other nodes.
pub(crate) const EVENT_CHANNEL: &str = "bulkq_queue_event";

/// The columns of a task row that its [`QueueEvent`] carries: all that a completion returns
/// (nothing else of a finished task is needed, and whole rows are several times the bytes
/// to send and decode), and what a node reads back for the tasks another node changed.
#[derive(FromQueryResult)]
pub(crate) struct EventColumns {
    id: Uuid,
    execution_component_name: String,
    owner_id: Uuid,
    workflow_status: TaskStatus,
    attempt: i32,
    progress_done: i64,
    progress_total: Option<i64>,
}

impl EventColumns {
    pub(crate) const COLUMNS: [Column; 7] = [
        Column::Id,
        Column::ExecutionComponentName,
        Column::OwnerId,
        Column::WorkflowStatus,
        Column::Attempt,
        Column::ProgressDone,
        Column::ProgressTotal,
    ];
}

impl From<EventColumns> for QueueEvent {
    fn from(row: EventColumns) -> Self {
        Self {
            task_id: row.id,
            component: row.execution_component_name,
            owner_id: row.owner_id,
            status: row.workflow_status,
            attempt: row.attempt,
            progress_done: row.progress_done,
            progress_total: row.progress_total,
        }
    }
}

/// The payload of an [`EVENT_CHANNEL`] notification, as [`announcing`] writes it in SQL: the
/// announcing store's origin, then the ids of tasks it changed, separated by spaces.
#[derive(Debug, PartialEq)]
pub(crate) struct ChangedTasks {
    pub origin: Uuid,
    pub task_ids: Vec<Uuid>,
}

impl ChangedTasks {
    /// Reads a payload; `None` for one [`announcing`] did not write.
    pub(crate) fn parse(payload: &str) -> Option<Self> {
        let mut words = payload.split(' ');
        let origin = words.next()?.parse().ok()?;
        let task_ids = words.map(str::parse).collect::<Result<_, _>>().ok()?;
        Some(Self { origin, task_ids })
    }
}

/// The statement `update` (an UPDATE of tasks returning at least their `id`, with its
/// parameters) extended, on PostgreSQL, to announce every row it changes on
/// [`EVENT_CHANNEL`] as part of the same statement; on SQLite `update` itself.
///
/// One statement instead of an UPDATE and then a `SELECT pg_notify` per payload: a claim
/// or a batch of completions is a single round trip, and needs no transaction of its own.
/// It announces only while another store watches (`queue_watcher`, see `watchers`): the
/// test is one lookup per statement, which gates the notifications' assembly too.
///
/// A notification names the changed tasks only ([`ChangedTasks`], [`IDS_PER_NOTIFICATION`]
/// to a payload, which PostgreSQL caps below 8,000 bytes); a node with subscribers reads
/// their events from the rows (`Store::task_events`), and one without ignores it. Sending
/// the events themselves made every claim and completion slower and had every node decode
/// every other node's events, watched or not (ADR 0013).
pub(crate) fn announcing(update: Statement, origin: Uuid) -> Statement {
    if update.db_backend != DbBackend::Postgres {
        return update;
    }
    let mut values = update.values.map(|values| values.0).unwrap_or_default();
    values.push(origin.to_string().into());
    let origin_parameter = values.len();
    let sql = format!(
        "WITH changed AS ({update}), \
         announced AS ( \
             SELECT pg_notify('{EVENT_CHANNEL}', ${origin_parameter} || string_agg(' ' || id::text, '')) \
             FROM (SELECT id, (row_number() OVER () - 1) / {IDS_PER_NOTIFICATION} AS part \
                   FROM changed \
                   WHERE EXISTS (SELECT 1 FROM queue_watcher \
                                 WHERE origin <> ${origin_parameter}::uuid \
                                   AND expires_date > now())) AS numbered \
             GROUP BY part) \
         SELECT changed.* FROM changed, (SELECT count(*) FROM announced) AS sent",
        update = update.sql,
    );
    Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
}

/// Task ids per notification: as many as fit, after the origin, in PostgreSQL's limit on a
/// payload (less than 8,000 bytes). Each is a space and 36 characters of hyphenated UUID.
const IDS_PER_NOTIFICATION: usize = (MAX_PAYLOAD - UUID_TEXT) / (1 + UUID_TEXT);
const MAX_PAYLOAD: usize = 7_999;
const UUID_TEXT: usize = 36;

/// On PostgreSQL, wakes every node's producer once the transaction commits.
pub(crate) async fn notify_wake<C: ConnectionTrait>(conn: &C) -> Result<(), sea_orm::DbErr> {
    if conn.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    conn.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_notify($1, '')",
        [WAKE_CHANNEL.into()],
    ))
    .await?;
    Ok(())
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use std::time::Duration;

    use chrono::Utc;
    use sea_orm::sqlx::postgres::PgListener;
    use uuid::Uuid;

    use super::{ChangedTasks, EVENT_CHANNEL};
    use crate::schema::QueueMigrator;
    use crate::store::{Store, TaskGetAvailableParams};
    use crate::task::NewTask;
    use crate::testing::{Backend, TestDatabase};

    /// A claim of more tasks than one notification can name announces every one of them
    /// once, in payloads PostgreSQL accepts: one of 8,000 bytes or more would fail the claim.
    #[tokio::test]
    async fn a_large_claim_names_every_task_within_the_payload_limit() {
        let Some(db) = TestDatabase::create::<QueueMigrator>(Backend::Postgres).await else {
            return;
        };
        let store = Store::new(db.conn.clone());
        let mut listener = PgListener::connect_with(db.conn.get_postgres_connection_pool())
            .await
            .unwrap();
        listener.listen(EVENT_CHANNEL).await.unwrap();
        // Another store watches, so the claim announces (see `watchers`).
        let _watching = Store::new(db.conn.clone()).subscribe().await.unwrap();
        let tasks = (0..1_000)
            .map(|_| NewTask::new("test.announce", serde_json::json!({}), Uuid::nil()))
            .collect();
        store.enqueue_many(store.db(), tasks).await.unwrap();
        let claimed = store
            .task_get_available(TaskGetAvailableParams {
                max: 1_000,
                now: Utc::now(),
                node_id: "announce-node",
                take_turns: true,
                on_node: &[],
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1_000);

        let mut announced = Vec::new();
        while announced.len() < claimed.len() {
            let notification = tokio::time::timeout(Duration::from_secs(10), listener.recv())
                .await
                .expect("the claim announces every task it took")
                .unwrap();
            assert!(notification.payload().len() < 8_000);
            let changed = ChangedTasks::parse(notification.payload()).expect("a readable payload");
            assert_eq!(changed.origin, store.events().origin());
            announced.extend(changed.task_ids);
        }
        let mut claimed: Vec<Uuid> = claimed.iter().map(|task| task.id).collect();
        claimed.sort_unstable();
        announced.sort_unstable();
        assert_eq!(announced, claimed);
    }

    #[test]
    fn payloads_not_written_by_announcing_are_refused() {
        for payload in [
            "",
            "not-a-uuid",
            "00000000-0000-0000-0000-000000000000 nonsense",
        ] {
            assert_eq!(ChangedTasks::parse(payload), None, "{payload:?}");
        }
    }
}
