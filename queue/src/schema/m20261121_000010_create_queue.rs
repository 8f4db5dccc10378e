//! The queue's tables: tasks, their history, node heartbeats and paused components.
//!
//! Partial indexes are written as SQL (SeaQuery has no builder for them); SQLite and
//! PostgreSQL accept the same text.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Indexes SeaQuery cannot express, identical on both backends.
///
/// - `claim`: the producer's `ORDER BY priority DESC, run_at, id` over QUEUED rows only, so
///   claiming stays fast however many finished tasks are retained.
/// - `unique_key`: a key is unique among tasks that still have work ahead of them; this is
///   also the arbiter of the enqueue's `ON CONFLICT`.
/// - `running`: the rescuer's search for tasks held by dead nodes (dropped again by
///   `m20261122_000050_drop_running_index`).
/// - `stopped`: the pruner's search for old finished tasks.
const PARTIAL_INDEXES: [&str; 4] = [
    "CREATE INDEX idx_queue_task_claim ON queue_task (priority DESC, run_at, id) \
     WHERE workflow_status = 'QUEUED'",
    "CREATE UNIQUE INDEX idx_queue_task_unique_key ON queue_task (unique_key) \
     WHERE unique_key IS NOT NULL AND workflow_status IN ('QUEUED', 'SCHEDULING', 'EXECUTING')",
    RUNNING_INDEX,
    "CREATE INDEX idx_queue_task_stopped ON queue_task (workflow_stopped_date) \
     WHERE workflow_stopped_date IS NOT NULL",
];

pub(super) const RUNNING_INDEX: &str = "CREATE INDEX idx_queue_task_running \
     ON queue_task (scheduled_by_process) WHERE workflow_status IN ('SCHEDULING', 'EXECUTING')";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table("queue_task")
                    .col(uuid("id").primary_key())
                    .col(timestamp_with_time_zone("created_date"))
                    .col(string_len("created_by", 128))
                    .col(timestamp_with_time_zone("modified_date"))
                    .col(string_len("modified_by", 128))
                    .col(uuid("owner_id"))
                    .col(uuid("run_as_id"))
                    .col(string_len("execution_component_name", 128))
                    .col(json("execution_spec"))
                    .col(json("execution_state").default("{}"))
                    .col(string_len("workflow_status", 16))
                    .col(text_null("workflow_status_desc"))
                    .col(timestamp_with_time_zone("run_at"))
                    .col(integer("priority").default(0))
                    .col(integer("attempt").default(0))
                    .col(integer("max_attempts"))
                    .col(string_len_null("unique_key", 256))
                    .col(timestamp_with_time_zone_null("scheduling_started_date"))
                    .col(string_len_null("scheduled_by_process", 160))
                    .col(timestamp_with_time_zone_null("execution_started_date"))
                    .col(timestamp_with_time_zone_null("workflow_stopped_date"))
                    .col(big_integer("progress_done").default(0))
                    .col(big_integer_null("progress_total"))
                    .col(big_integer("lease_version").default(0))
                    .to_owned(),
            )
            .await?;
        for sql in PARTIAL_INDEXES {
            manager.get_connection().execute_unprepared(sql).await?;
        }
        // Dashboards count and filter by status and component, and list an owner's tasks.
        manager
            .create_index(
                Index::create()
                    .name("idx_queue_task_status_component")
                    .table("queue_task")
                    .col("workflow_status")
                    .col("execution_component_name")
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_queue_task_owner")
                    .table("queue_task")
                    .col("owner_id")
                    .col("created_date")
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table("queue_task_event")
                    .col(uuid("id").primary_key())
                    .col(uuid("task_id"))
                    .col(timestamp_with_time_zone("occurred_date"))
                    .col(string_len("status", 16))
                    .col(integer("attempt"))
                    .col(text_null("message"))
                    .col(string_len("actor", 160))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_queue_task_event_task")
                            .from("queue_task_event", "task_id")
                            .to("queue_task", "id")
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_queue_task_event_task")
                    .table("queue_task_event")
                    .col("task_id")
                    .col("id")
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table("queue_node")
                    .col(string_len("node_id", 160).primary_key())
                    .col(string_len("system_id", 128))
                    .col(timestamp_with_time_zone("started_date"))
                    .col(timestamp_with_time_zone("heartbeat_date"))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table("queue_component_pause")
                    .col(string_len("component", 128).primary_key())
                    .col(timestamp_with_time_zone("paused_date"))
                    .col(string_len("paused_by", 128))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            "queue_component_pause",
            "queue_node",
            "queue_task_event",
            "queue_task",
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
