//! `queue_periodic_job`: one row per registered periodic job, shared by the cluster. The
//! guarded advance of `last_due_at` is what lets exactly one node run each due time.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// A periodic job and its last run.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "queue_periodic_job")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// The schedule as registered (`every 5s`, or a cron expression).
    pub schedule: String,
    /// The next due time after the last run, as its runner computed it.
    pub next_run_at: Option<DateTime<Utc>>,
    /// The due time of the last run claimed; only ever moves forward.
    pub last_due_at: Option<DateTime<Utc>>,
    pub last_started_at: Option<DateTime<Utc>>,
    pub last_finished_at: Option<DateTime<Utc>>,
    /// `ok`, or the error of the last run.
    pub last_result: Option<String>,
    /// The node that ran it last.
    pub last_node: Option<String>,
    /// Paused by an admin: no node runs it until it is resumed.
    pub paused: bool,
    /// The job's `lock_at_most_for` and `lock_at_least_for`, as the nodes declare them.
    pub lock_at_most_ms: Option<i64>,
    pub lock_at_least_ms: Option<i64>,
    /// Due times that found the job's scheduler lock held, and the last of them.
    pub skipped_runs: i64,
    pub last_skipped_at: Option<DateTime<Utc>>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
