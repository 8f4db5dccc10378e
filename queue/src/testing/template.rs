//! Migrated PostgreSQL template databases: each PostgreSQL test database is a copy of one
//! (`CREATE DATABASE … TEMPLATE`), so a test does not run every migration again (SQLite
//! migrates a new file in a fraction of that time). A template is made once per migrator and
//! test binary: its key covers the migrations' names and the running executable, so a
//! rebuilt binary (with edited migrations, say) never copies a stale schema. Templates older
//! than [`STALE_AFTER`] are removed by whichever test makes a new one.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use sea_orm_migration::MigratorTrait;
use uuid::Uuid;

use super::database::replace_database_name;
use crate::database::migrate;

/// How long a template outlives the build that made it.
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);
/// Template databases on a PostgreSQL server: `bulkq_tpl_<key>_<unix seconds>`.
const POSTGRES_PREFIX: &str = "bulkq_tpl_";

/// A name for the schema `M` builds, as the running test binary has it.
fn key<M: MigratorTrait>() -> String {
    let mut hasher = DefaultHasher::new();
    std::any::type_name::<M>().hash(&mut hasher);
    for migration in M::migrations() {
        migration.name().hash(&mut hasher);
    }
    if let Ok(binary) = std::env::current_exe().and_then(std::fs::metadata) {
        binary.len().hash(&mut hasher);
        binary.modified().ok().hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The key of the advisory lock under which templates are made and removed ("bulkq tp").
const TEMPLATE_LOCK_KEY: i64 = 0x6275_6c6b_7120_7470;

/// The name of the PostgreSQL template database for `M`, made first if need be. One process
/// at a time makes or removes templates (under an advisory lock of the server's admin
/// database); a template is migrated under a scratch name and renamed when whole, so no test
/// ever copies half a schema.
pub(super) async fn postgres_template<M: MigratorTrait>(
    admin: &DatabaseConnection,
    admin_url: &str,
) -> String {
    let key = key::<M>();
    let lock = TEMPLATE_LOCK_KEY;
    admin
        .execute_unprepared(&format!("SELECT pg_advisory_lock({lock})"))
        .await
        .expect("take the template lock");
    let name = match existing_template(admin, &key).await {
        Some(name) => name,
        None => {
            remove_stale_templates(admin).await;
            let name = format!("{POSTGRES_PREFIX}{key}_{}", unix_now());
            let scratch = format!("bulkq_tplnew_{}_{}", Uuid::new_v4().simple(), unix_now());
            admin
                .execute_unprepared(&format!("CREATE DATABASE {scratch}"))
                .await
                .expect("create the template database");
            migrate::<M>(&replace_database_name(admin_url, &scratch))
                .await
                .expect("apply migrations");
            admin
                .execute_unprepared(&format!("ALTER DATABASE {scratch} RENAME TO {name}"))
                .await
                .expect("name the template");
            name
        }
    };
    let _ = admin
        .execute_unprepared(&format!("SELECT pg_advisory_unlock({lock})"))
        .await;
    name
}

async fn existing_template(admin: &DatabaseConnection, key: &str) -> Option<String> {
    let row = admin
        .query_one_raw(Statement::from_string(
            admin.get_database_backend(),
            format!(r"SELECT datname FROM pg_database WHERE datname LIKE 'bulkq\_tpl\_{key}\_%'"),
        ))
        .await
        .expect("look for the template")?;
    Some(row.try_get_by_index(0).expect("a database name"))
}

/// Drops templates made more than [`STALE_AFTER`] ago (by other builds), and scratch
/// databases of templates never finished, judged by the time in their names. One being
/// copied at that moment refuses to go; it is left for later.
async fn remove_stale_templates(admin: &DatabaseConnection) {
    let rows = admin
        .query_all_raw(Statement::from_string(
            admin.get_database_backend(),
            r"SELECT datname FROM pg_database WHERE datname LIKE 'bulkq\_tpl%'".to_owned(),
        ))
        .await
        .unwrap_or_default();
    for row in rows {
        let Ok(name) = row.try_get_by_index::<String>(0) else {
            continue;
        };
        let made = name
            .rsplit('_')
            .next()
            .and_then(|seconds| seconds.parse::<u64>().ok())
            .unwrap_or(0);
        if unix_now().saturating_sub(made) > STALE_AFTER.as_secs() {
            let _ = admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name}"))
                .await;
        }
    }
}
