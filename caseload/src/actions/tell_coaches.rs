//! The step after a walk that tells coaches of their people (early alerts, coach
//! reassignment): claim, send, record, a few coaches at a time, each commit carrying the
//! task's report (see [`crate::coach_notices`] for why no coach is told twice).

use chrono::Utc;
use futures_util::{StreamExt, stream};
use queue::{TaskContext, TaskError};

use super::walk::{Walk, task_error};
use crate::coach_notices::{self, News, deliver, messages, record};
use crate::email::{Mailer, UntilRefused};

/// Notices in flight at once.
const SEND_CONCURRENCY: usize = 4;

/// Tells every coach of the people the task changed, once; `details` ends each message.
///
/// Coaches the relay deferred get one more try per attempt; while any wait, the attempt ends
/// with a transient error, so the queue tries again after its backoff (the walk itself is
/// finished and does not run again).
pub(crate) async fn tell_coaches(
    ctx: &mut TaskContext,
    walk: &mut Walk<()>,
    mailer: &Mailer,
    news: News,
    details: &str,
) -> Result<(), TaskError> {
    let task_id = ctx.task_id();
    let started = Utc::now();
    let txn = ctx.begin_batch().await?;
    let interrupted = coach_notices::fail_interrupted(&*txn, task_id, started)
        .await
        .map_err(task_error)?;
    walk.progress.report.coaches_not_told += interrupted;
    walk.commit(ctx, txn).await?;
    let mut deferred = 0;
    loop {
        let txn = ctx.begin_batch().await?;
        let coaches = coach_notices::claim(&*txn, task_id, news, started, Utc::now())
            .await
            .map_err(task_error)?;
        if coaches.is_empty() {
            break;
        }
        let ids: Vec<_> = coaches.iter().map(|coach| coach.id).collect();
        let messages = messages(&*txn, task_id, news, &ids, details)
            .await
            .map_err(task_error)?;
        walk.commit(ctx, txn).await?;
        let run = UntilRefused::default();
        let sends: Vec<_> = coaches
            .iter()
            .zip(&messages)
            .map(|(coach, content)| deliver(mailer, coach, content, &run))
            .collect();
        let deliveries: Vec<_> = stream::iter(sends)
            .buffered(SEND_CONCURRENCY)
            .collect()
            .await;
        let refused = deliveries
            .iter()
            .flatten()
            .find_map(|delivery| delivery.relay_refusal())
            .map(str::to_owned);
        let txn = ctx.begin_closing_batch().await?;
        for (coach, delivery) in coaches.iter().zip(&deliveries) {
            let told = record(&*txn, task_id, coach.id, delivery.as_ref(), Utc::now())
                .await
                .map_err(task_error)?;
            walk.progress.report.coaches_told += told.told;
            walk.progress.report.coaches_not_told += told.not_told;
            deferred += told.deferred;
        }
        walk.commit(ctx, txn).await?;
        if let Some(detail) = refused {
            return Err(TaskError::Permanent(detail));
        }
    }
    if deferred > 0 {
        return Err(TaskError::transient(format!(
            "{deferred} coach notices deferred by the mail relay; trying them again later"
        )));
    }
    Ok(())
}
