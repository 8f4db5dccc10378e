//! A person on the caseload: someone staff advise and act on in bulk.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "person")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The school's own identifier for the person, unique across the caseload.
    pub school_id: String,
    pub first_name: String,
    pub last_name: String,
    /// Not everyone has an address on file; bulk email skips those who don't.
    pub email: Option<String>,
    /// The `program_status.code` the person is in.
    pub program_status: String,
    /// The staff user assigned as the person's coach ("my caseload").
    pub coach_id: Option<Uuid>,
    /// Who last changed the record (a staff user), for the audit trail.
    pub updated_by: Option<Uuid>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
