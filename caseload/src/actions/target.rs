//! Who a bulk action is for: a list of ids or a saved query, and the batch-by-batch walk over
//! either that an executor resumes from its checkpoint.

use bulkq_types::filter::PersonFilter;
use sea_orm::{Condition, ConnectionTrait};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::Targets;
use crate::search::{CandidatesAhead, count_people_within, people_after_reading_ahead};
use crate::store::entity::person;
use crate::store::people::PersonNow;

/// The most ids one request may name; larger selections are sent as a query.
pub const MAX_TARGET_IDS: usize = 10_000;

/// The people a task acts on, as stored in its spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// These people, each once, in the order requested.
    Ids(Vec<Uuid>),
    /// Everyone the filter matches when the task runs (within the run_as user's scope).
    Query(PersonFilter),
}

impl Target {
    /// How many people the target names now: the list's length, or the query's matches.
    pub async fn count<C: ConnectionTrait>(
        &self,
        db: &C,
        scope: Condition,
    ) -> Result<u64, CaseloadError> {
        match self {
            Target::Ids(ids) => Ok(ids.len() as u64),
            Target::Query(filter) => count_people_within(db, filter, scope).await,
        }
    }

    /// The batch after `cursor`: at most `size` people, and the cursor after them; `None`
    /// at the end of the walk.
    ///
    /// A query is walked by keyset on the primary key within `scope`, the cursor being the
    /// last id visited (a batch may be empty short of the end, see
    /// [`WalkStep`](crate::search::WalkStep)), its candidates read `ahead`; a list is walked
    /// by position.
    pub(crate) async fn next_batch<C: ConnectionTrait>(
        &self,
        db: &C,
        scope: Condition,
        cursor: &Cursor,
        size: u64,
        ahead: &mut CandidatesAhead,
    ) -> Result<Option<TargetBatch>, CaseloadError> {
        match self {
            Target::Ids(ids) => {
                let start = usize::try_from(cursor.position)
                    .unwrap_or(usize::MAX)
                    .min(ids.len());
                let end = start
                    .saturating_add(usize::try_from(size).unwrap_or(usize::MAX))
                    .min(ids.len());
                let ids = ids[start..end].to_vec();
                Ok((!ids.is_empty()).then(|| TargetBatch {
                    next: cursor.advanced(ids.len(), None),
                    ids,
                    rows: None,
                }))
            }
            Target::Query(filter) => {
                let step = people_after_reading_ahead(db, filter, scope, cursor.after, size, ahead)
                    .await?;
                let Some(last_visited) = step.last_visited else {
                    return Ok(None);
                };
                Ok(Some(TargetBatch {
                    next: cursor.advanced(step.people.len(), Some(last_visited)),
                    ids: step.people.iter().map(|row| row.id).collect(),
                    rows: Some(step.people),
                }))
            }
        }
    }
}

/// How far a walk over a target got; part of the task's checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// People visited so far (for a list, the index of the next id).
    pub position: u64,
    /// For a query: the last id visited.
    pub after: Option<Uuid>,
}

impl Cursor {
    fn advanced(&self, visited: usize, last: Option<Uuid>) -> Self {
        Cursor {
            position: self.position + visited as u64,
            after: last.or(self.after),
        }
    }
}

/// One batch of a walk.
#[derive(Debug)]
pub(crate) struct TargetBatch {
    /// The people of the batch (for a list, possibly unknown or out of scope).
    pub ids: Vec<Uuid>,
    /// For a query, their rows as read (all known and in scope); `None` for a list.
    pub rows: Option<Vec<person::Model>>,
    /// Where the next batch starts.
    pub next: Cursor,
}

impl TargetBatch {
    /// A query's batch as each person's id, coach and status, as the walk read them in the
    /// batch's transaction. `None` for a list.
    pub fn read_people(&self) -> Option<Vec<PersonNow>> {
        self.rows.as_ref().map(|rows| {
            rows.iter()
                .map(|row| (row.id, row.coach_id, row.program_status.clone()))
                .collect()
        })
    }

    /// A query's batch as targets, all allowed: the walk has just read each of its people
    /// within reach, in the batch's transaction. `None` for a list, whose ids are yet to be
    /// sorted.
    pub fn known_targets(&self) -> Option<Targets> {
        self.rows
            .as_ref()
            .map(|_| Targets::all_allowed(self.ids.clone()))
    }
}
