//! Server renders of pages finish in a process that builds routers at the same time, as the
//! tests do (each test builds its own).

use axum::http::StatusCode;
use migration::Migrator;
use queue::testing::TestDatabase;
use tokio::task::JoinSet;

use crate::helpers::*;

queue::backend_tests!(Migrator => pages_finish_while_other_routers_are_built);

/// Rounds of pages rendered at once, each through a router built for it meanwhile.
const ROUNDS: usize = 5;
const PAGES_AT_ONCE: usize = 20;

/// Listing the app's pages switches leptos's resource loading off process-wide (see
/// `server::web`); when every router listed them again, a page whose render overlapped
/// another router's listing never finished (16–24 of 100 such pages).
async fn pages_finish_while_other_routers_are_built(db: TestDatabase) {
    let cookie = sign_in(&app(&db).await).await;
    for _ in 0..ROUNDS {
        let mut pages = JoinSet::new();
        for _ in 0..PAGES_AT_ONCE {
            let app = router(&db, queue::Store::new(db.conn.clone()), Default::default());
            let cookie = cookie.clone();
            pages.spawn(async move { send(&app, get("/", Some(&cookie))).await });
        }
        for (response, body) in pages.join_all().await {
            assert_status(&response, &body, StatusCode::OK);
            // The results' boundary resolved, not only the page's shell.
            assert!(body.contains("data-testid=\"result-summary\""), "{body}");
        }
    }
}
