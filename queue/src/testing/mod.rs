//! Test support (feature `testing`): throwaway databases on both backends, the macro that
//! runs one test body against each of them, factories, and executors for tests.

#[cfg(feature = "amqp")]
mod amqp;
mod database;
mod executors;
mod support;
mod template;

#[cfg(feature = "amqp")]
pub use amqp::rabbitmq_url;
pub use database::{Backend, TestDatabase, postgres_admin_url};
pub use executors::ItemsExecutor;
pub use support::{
    block_on_aside, create_effect_table, fast_config, peak_rss_mib, reset_peak_rss, wait_until,
};

/// Defines, for each named `async fn name(db: TestDatabase)`, a module `name` with two tests,
/// `sqlite` and `postgres`, each running the body against a fresh, migrated database of that
/// backend. The PostgreSQL test returns early (saying so on stderr) when no server answers,
/// unless `BULKQ_REQUIRE_POSTGRES` is set, in which case that is a failure.
#[macro_export]
macro_rules! backend_tests {
    ($migrator:ty => $($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn sqlite() {
                    let db = $crate::testing::TestDatabase::create::<$migrator>(
                        $crate::testing::Backend::Sqlite,
                    )
                    .await
                    .expect("SQLite is always available");
                    super::$name(db).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn postgres() {
                    if let Some(db) = $crate::testing::TestDatabase::create::<$migrator>(
                        $crate::testing::Backend::Postgres,
                    )
                    .await
                    {
                        super::$name(db).await;
                    }
                }
            }
        )*
    };
}
