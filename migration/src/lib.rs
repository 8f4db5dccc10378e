//! Schema migrations for bulkq, applied at start-up and by `bulkq migrate`.
//!
//! One file per change, named `mYYYYMMDD_NNNNNN_what.rs`; every migration must run on both
//! SQLite and PostgreSQL, so they are written with SeaQuery's schema builder and only fall
//! back to backend-specific SQL where a feature (such as a partial index) needs it.

pub use sea_orm_migration::prelude::*;

mod m20261121_000001_create_caseload;
mod m20261121_000002_create_sessions;
mod m20261121_000020_caseload_actions;
mod m20261121_000021_search_indexes;
mod m20261121_000022_name_order_indexes;
mod m20261121_000040_postgres_contains_table;
mod m20261122_000041_sqlite_sort_keys;
mod m20261122_000042_drop_unused_person_indexes;
mod m20261128_000170_staff_accounts;
mod m20261128_000180_retired_status;
mod m20261128_000190_people_imports;
mod m20261129_000200_coach_changes;
mod m20261129_000300_early_alerts;
mod m20261129_000400_task_notices;
mod m20261129_000500_audit_trail;
mod m20261129_000600_notices_seen;
mod m20261129_000700_admin_alerts;
mod m20261129_000800_send_rate;
mod m20261129_000900_task_outcomes;
mod m20261129_001000_no_watch_index_by_person;
mod m20261207_001100_early_alerts_by_person;
mod m20261209_001400_status_name_ranges;
mod m20261209_001500_coach_name_ranges;

/// Runs raw SQL statements in order: the backend-specific parts of migrations (triggers,
/// partial and expression indexes, virtual tables) that SeaQuery's builder cannot express.
pub(crate) async fn execute_all(
    manager: &SchemaManager<'_>,
    statements: impl IntoIterator<Item = String>,
) -> Result<(), DbErr> {
    let db = manager.get_connection();
    for sql in statements {
        db.execute_unprepared(&sql).await?;
    }
    Ok(())
}

/// `DROP TRIGGER` for each of `triggers`.
pub(crate) fn drop_triggers(triggers: &[&str]) -> Vec<String> {
    triggers
        .iter()
        .map(|trigger| format!("DROP TRIGGER {trigger}"))
        .collect()
}

/// Every migration of the product, in the order they apply.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261121_000001_create_caseload::Migration),
            Box::new(m20261121_000002_create_sessions::Migration),
            Box::new(queue::schema::m20261121_000010_create_queue::Migration),
            Box::new(m20261121_000020_caseload_actions::Migration),
            Box::new(m20261121_000021_search_indexes::Migration),
            Box::new(m20261121_000022_name_order_indexes::Migration),
            Box::new(queue::schema::m20261121_000030_queue_scheduler::Migration),
            Box::new(m20261121_000040_postgres_contains_table::Migration),
            Box::new(m20261122_000041_sqlite_sort_keys::Migration),
            Box::new(m20261122_000042_drop_unused_person_indexes::Migration),
            Box::new(queue::schema::m20261122_000050_drop_running_index::Migration),
            Box::new(queue::schema::m20261124_000060_task_counts::Migration),
            Box::new(queue::schema::m20261124_000070_ready_table::Migration),
            Box::new(queue::schema::m20261124_000080_hot_updates::Migration),
            Box::new(queue::schema::m20261124_000090_steady_plans::Migration),
            Box::new(queue::schema::m20261125_000100_crash_count::Migration),
            Box::new(queue::schema::m20261125_000110_unique_key_lookup::Migration),
            Box::new(queue::schema::m20261126_000120_periodic_controls::Migration),
            Box::new(queue::schema::m20261126_000130_task_watchers::Migration),
            Box::new(queue::schema::m20261127_000140_counted_claims::Migration),
            Box::new(queue::schema::m20261128_000150_pages_a_third_full::Migration),
            Box::new(queue::schema::m20261128_000160_derived_columns_kept_by_triggers::Migration),
            Box::new(m20261128_000170_staff_accounts::Migration),
            Box::new(m20261128_000180_retired_status::Migration),
            Box::new(m20261128_000190_people_imports::Migration),
            Box::new(m20261129_000200_coach_changes::Migration),
            Box::new(m20261129_000300_early_alerts::Migration),
            Box::new(m20261129_000400_task_notices::Migration),
            Box::new(queue::schema::m20261129_000170_owner_turns::Migration),
            Box::new(queue::schema::m20261129_000180_running_limits::Migration),
            Box::new(m20261129_000500_audit_trail::Migration),
            Box::new(m20261129_000600_notices_seen::Migration),
            Box::new(m20261129_000700_admin_alerts::Migration),
            Box::new(m20261129_000800_send_rate::Migration),
            Box::new(m20261129_000900_task_outcomes::Migration),
            Box::new(m20261129_001000_no_watch_index_by_person::Migration),
            Box::new(m20261207_001100_early_alerts_by_person::Migration),
            Box::new(queue::schema::m20261207_001200_claims_by_quota::Migration),
            Box::new(queue::schema::m20261208_001300_claims_past_taken_entries::Migration),
            Box::new(m20261209_001400_status_name_ranges::Migration),
            Box::new(m20261209_001500_coach_name_ranges::Migration),
        ]
    }
}
