//! One act of the audit trail: who did what to which targets, when and from where.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_event")]
pub struct Model {
    /// A UUID v7: newest first is id order.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub at: DateTimeUtc,
    /// The staff user who acted; `None` for `bulkq` on a shell.
    pub actor_id: Option<Uuid>,
    /// Their username (kept when the account is renamed or gone).
    pub actor: String,
    /// `bulkq_types::audit::AuditArea`'s stored form.
    pub area: String,
    /// `bulkq_types::audit::AuditAct`'s stored form.
    pub act: String,
    /// The first targets by id or name, comma-separated.
    pub targets: String,
    pub target_count: i64,
    pub detail: String,
    pub client: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
