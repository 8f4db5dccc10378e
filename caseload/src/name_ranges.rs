//! SQLite's counted name ranges (ADR 0087): a deep page of a status or a caseload starts
//! its walk of the name index from the range where its offset falls, so the ranges are kept
//! small. People arriving (an import, a seed) land in the ranges that exist, so a job cuts
//! any range that has grown past twice [`RANGE_PEOPLE`] into pieces of that size, on one
//! node at a time.

use std::time::Duration;

use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use sea_orm::DbBackend;

use crate::CaseloadError;
use crate::store::name_ranges;

/// The job cutting grown ranges; the name admins see on the periodic jobs page.
pub const NAME_RANGES_JOB: &str = "caseload.name_ranges";

/// How many people a range is cut to hold: a page's walk tests at most about twice this
/// many rows before its first person, a millisecond or two.
pub const RANGE_PEOPLE: u64 = 1024;

/// How often the job looks for grown ranges: a first import's people are found fast within
/// about this long.
const CUT_EVERY: Duration = Duration::from_secs(60);

/// Cuts per write transaction: each reads about [`RANGE_PEOPLE`] rows, so a transaction
/// holds the writer for a few milliseconds.
const CUTS_PER_TRANSACTION: u64 = 16;

/// The job that keeps the name ranges small, on one node at a time (nothing to do on
/// PostgreSQL, which has none).
pub fn name_range_job() -> PeriodicJob {
    PeriodicJob::new(NAME_RANGES_JOB, Schedule::Every(CUT_EVERY), NameRanges)
        .with_lock_at_least_half_of(CUT_EVERY)
}

struct NameRanges;

#[async_trait::async_trait]
impl PeriodicTask for NameRanges {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let cuts = cut_grown_ranges(&ctx.store, RANGE_PEOPLE)
            .await
            .map_err(|e| e.to_string())?;
        if cuts > 0 {
            tracing::info!(cuts, "cut grown name ranges");
        }
        Ok(())
    }
}

/// Cuts every range holding more than twice `people` into ranges of `people` (the last
/// piece of each keeps the rest), a few cuts per write transaction; answers how many cuts.
pub async fn cut_grown_ranges(store: &queue::Store, people: u64) -> Result<u64, CaseloadError> {
    if store.backend() != DbBackend::Sqlite {
        return Ok(0);
    }
    let mut cuts = 0;
    let mut grown = None;
    loop {
        let txn = store.begin_write().await?;
        for _ in 0..CUTS_PER_TRANSACTION {
            let range = match grown.take() {
                Some(range) => range,
                None => match name_ranges::holding_more_than(&*txn, people * 2).await? {
                    Some(range) => range,
                    None => {
                        txn.commit().await?;
                        return Ok(cuts);
                    }
                },
            };
            let Some((rest, holds)) = name_ranges::split(&*txn, range, people).await? else {
                txn.commit().await?;
                return Ok(cuts);
            };
            cuts += 1;
            grown = (holds > people * 2).then_some(rest);
        }
        txn.commit().await?;
    }
}
