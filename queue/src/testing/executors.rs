//! Executors for tests (shared with the crash-test child process).

use std::time::Duration;

use async_trait::async_trait;
use sea_orm::ConnectionTrait;
use serde_json::json;

use crate::error::TaskError;
use crate::executor::{TaskContext, TaskExecutor};
use crate::store::claim::Checkpoint;

/// Processes items `0..spec.items` in batches of `spec.batch`, each batch writing one
/// `test_effect` row per item together with the checkpoint `{"next": <first unprocessed>}`;
/// pauses `pause` before each batch (so a test can kill it mid-way).
pub struct ItemsExecutor {
    pub pause: Duration,
}

#[async_trait]
impl TaskExecutor for ItemsExecutor {
    async fn execute(&self, ctx: &mut TaskContext) -> Result<(), TaskError> {
        let field = |name: &str| {
            ctx.spec()[name]
                .as_i64()
                .ok_or_else(|| TaskError::permanent(format!("spec.{name} is not a number")))
        };
        let (items, batch) = (field("items")?, field("batch")?.max(1));
        let mut next = ctx.checkpoint()["next"].as_i64().unwrap_or(0);
        let task_id = ctx.task_id();
        while next < items {
            tokio::time::sleep(self.pause).await;
            let end = (next + batch).min(items);
            let values: Vec<String> = (next..end)
                .map(|item| format!("('{task_id}', {item})"))
                .collect();
            let sql = format!(
                "INSERT INTO test_effect (task_id, item) VALUES {}",
                values.join(", ")
            );
            ctx.batch(move |txn| {
                Box::pin(async move {
                    txn.execute_unprepared(&sql).await?;
                    Ok(Checkpoint::new(json!({ "next": end }))
                        .with_progress(end)
                        .with_total(items))
                })
            })
            .await?;
            next = end;
        }
        Ok(())
    }
}
