//! An early alert raised for a person by a bulk task: open until someone closes it.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "early_alert")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub person_id: Uuid,
    /// The task that raised it; `(task_id, person_id)` is unique, so a batch run again after
    /// a crash cannot raise a person's alert twice.
    pub task_id: Uuid,
    /// The person's coach when it was raised: the one told of it.
    pub coach_id: Option<Uuid>,
    pub course: String,
    /// Reason codes, comma-separated.
    pub reasons: String,
    pub suggestion: String,
    pub comment: String,
    /// The staff user it was raised as (the task's `run_as`).
    pub raised_by: Uuid,
    pub raised_at: DateTimeUtc,
    pub closed_by: Option<Uuid>,
    pub closed_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
