//! One change of a person's program status: who changed what, when, and by which task.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "program_status_change")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub person_id: Uuid,
    pub from_status: String,
    pub to_status: String,
    /// Why, as the staff user wrote it.
    pub reason: String,
    /// The staff user the change was made as (a task's `run_as`).
    pub changed_by: Uuid,
    pub changed_at: DateTimeUtc,
    /// The bulk task that made the change; `(task_id, person_id)` is unique, so a batch run
    /// again after a crash cannot record a person twice.
    pub task_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
