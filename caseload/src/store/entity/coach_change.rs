//! One move of a person to another coach: from whom, to whom, by whom, when, by which task.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "coach_change")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub person_id: Uuid,
    /// `None`: the person had no coach.
    pub from_coach_id: Option<Uuid>,
    pub to_coach_id: Uuid,
    /// The staff user the move was made as (a task's `run_as`).
    pub changed_by: Uuid,
    pub changed_at: DateTimeUtc,
    /// The bulk task that made the move; `(task_id, person_id)` is unique, so a batch run
    /// again after a crash cannot move a person twice.
    pub task_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
