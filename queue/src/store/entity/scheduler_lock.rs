//! `queue_scheduler_lock`: one row per named lock, ever (ShedLock's layout). A lock is held
//! while `lock_until` lies in the future by the database's clock.

use chrono::{DateTime, Utc};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// A scheduler lock, held or not.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "queue_scheduler_lock")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub name: String,
    /// Held until then; free from then on.
    pub lock_until: DateTime<Utc>,
    /// When the current (or last) holder acquired it.
    pub locked_at: DateTime<Utc>,
    /// The holder (a node id, optionally with the job's name).
    pub locked_by: String,
    /// Identifies one acquisition.
    pub grant_id: Uuid,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
