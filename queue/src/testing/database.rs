//! Throwaway databases for tests: a SQLite file in a temporary directory, or a PostgreSQL
//! database with a unique name that is dropped again when the test is done.

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};
use sea_orm_migration::MigratorTrait;
use tempfile::TempDir;
use uuid::Uuid;

use super::template;
use crate::database::{backend_of, connect};

/// The PostgreSQL server tried when neither `TEST_DATABASE_URL` nor `DATABASE_URL` names one.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Which database engine a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A freshly created and migrated database that disappears when dropped.
pub struct TestDatabase {
    pub conn: DatabaseConnection,
    /// The URL the database can be opened with (e.g. by a child process under test).
    pub url: String,
    pub backend: Backend,
    cleanup: Cleanup,
}

/// What must be removed when the test is done.
enum Cleanup {
    /// The temporary directory holding the SQLite file; removed when dropped.
    Sqlite(#[allow(dead_code)] TempDir),
    /// The database created on the server for this test.
    Postgres { admin_url: String, name: String },
}

/// The PostgreSQL server URL for tests, or `None` when no server answers.
///
/// `TEST_DATABASE_URL` wins, then a `postgres` `DATABASE_URL`, then the local default. When
/// `BULKQ_REQUIRE_POSTGRES` is set (the test command sets it under CI) an unreachable server
/// is a failure rather than a skip.
pub async fn postgres_admin_url() -> Option<String> {
    let url = std::env::var("TEST_DATABASE_URL")
        .ok()
        .or_else(|| std::env::var("DATABASE_URL").ok())
        .filter(|url| backend_of(url) == DbBackend::Postgres)
        .unwrap_or_else(|| DEFAULT_POSTGRES_URL.to_owned());
    match connect(&url, 1).await {
        Ok(conn) => {
            let _ = conn.close().await;
            Some(url)
        }
        Err(error) if std::env::var_os("BULKQ_REQUIRE_POSTGRES").is_some() => {
            panic!("PostgreSQL is required but {url} does not answer: {error}")
        }
        Err(error) => {
            eprintln!("SKIPPED: PostgreSQL test, {url} does not answer: {error}");
            None
        }
    }
}

impl TestDatabase {
    /// Creates a fresh database holding the schema `M` migrates to (on PostgreSQL a copy of
    /// a template, see `template`); `None` only for an unreachable PostgreSQL.
    pub async fn create<M: MigratorTrait>(backend: Backend) -> Option<Self> {
        let (url, cleanup) = match backend {
            Backend::Sqlite => {
                let (url, cleanup) = new_database(backend).await?;
                // Before the pool opens: see `database::migrate`.
                crate::database::migrate::<M>(&url)
                    .await
                    .expect("apply migrations");
                (url, cleanup)
            }
            Backend::Postgres => {
                let admin_url = postgres_admin_url().await?;
                let admin = connect(&admin_url, 1).await.expect("connect to PostgreSQL");
                let template = template::postgres_template::<M>(&admin, &admin_url).await;
                let options = format!("TEMPLATE {template}");
                let created = postgres_database(&admin, admin_url, &options).await;
                let _ = admin.close().await;
                created
            }
        };
        Some(Self::open(url, backend, cleanup).await)
    }

    /// Creates a fresh, empty database (no tables at all): for tests of migrating itself.
    /// `None` only for an unreachable PostgreSQL.
    pub async fn create_unmigrated(backend: Backend) -> Option<Self> {
        let (url, cleanup) = new_database(backend).await?;
        Some(Self::open(url, backend, cleanup).await)
    }

    async fn open(url: String, backend: Backend, cleanup: Cleanup) -> Self {
        let conn = connect(&url, crate::database::DEFAULT_MAX_CONNECTIONS)
            .await
            .expect("connect to the test database");
        Self {
            conn,
            url,
            backend,
            cleanup,
        }
    }

    /// Runs one SQL statement that returns a single integer (a count, say) and returns it.
    pub async fn scalar(&self, sql: &str) -> i64 {
        let row = self
            .conn
            .query_one_raw(Statement::from_string(
                self.conn.get_database_backend(),
                sql,
            ))
            .await
            .expect("run the query")
            .expect("the query returns a row");
        row.try_get_by_index::<i64>(0).expect("an integer column")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = &self.cleanup {
            let (admin_url, name) = (admin_url.clone(), name.clone());
            // Removes the database, closing any open sessions.
            super::block_on_aside(async move {
                if let Ok(admin) = connect(&admin_url, 1).await {
                    let _ = admin
                        .execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                    let _ = admin.close().await;
                }
            });
        }
    }
}

/// A new, empty database's URL, and how to remove it.
async fn new_database(backend: Backend) -> Option<(String, Cleanup)> {
    Some(match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("create a temporary directory");
            let url = format!("sqlite://{}/test.db?mode=rwc", dir.path().display());
            (url, Cleanup::Sqlite(dir))
        }
        Backend::Postgres => {
            let admin_url = postgres_admin_url().await?;
            let admin = connect(&admin_url, 1).await.expect("connect to PostgreSQL");
            let created = postgres_database(&admin, admin_url, "").await;
            let _ = admin.close().await;
            created
        }
    })
}

/// Creates a uniquely named database through `admin`, a connection to the server of
/// `admin_url` (`options` as for `CREATE DATABASE`, e.g. its template), and returns its URL
/// and how to remove it.
async fn postgres_database(
    admin: &DatabaseConnection,
    admin_url: String,
    options: &str,
) -> (String, Cleanup) {
    let name = format!("bulkq_test_{}", Uuid::new_v4().simple());
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name} {options}"))
        .await
        .expect("create the test database");
    let url = replace_database_name(&admin_url, &name);
    (url, Cleanup::Postgres { admin_url, name })
}

/// `postgres://user@host:port/old?opts` with the database name replaced by `name`.
pub(super) fn replace_database_name(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_end..]
        .find('/')
        .map_or(base.len(), |i| authority_end + i);
    let mut replaced = format!("{}/{}", &base[..path_start], name);
    if let Some(query) = query {
        replaced.push('?');
        replaced.push_str(query);
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::replace_database_name;

    #[test]
    fn replaces_the_database_name_and_keeps_options() {
        assert_eq!(
            replace_database_name("postgres://postgres@127.0.0.1:5432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(
            replace_database_name("postgres://u:p@h/db?sslmode=disable", "t2"),
            "postgres://u:p@h/t2?sslmode=disable"
        );
        assert_eq!(
            replace_database_name("postgres://h:5432", "t3"),
            "postgres://h:5432/t3"
        );
    }
}
