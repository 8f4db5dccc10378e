//! The versioned JSON API (`/api/1/...`) for programs and scripts: the bulk actions and the
//! status of the tasks they create. It shares the dashboard's sign-in session.
//!
//! Every failure is a JSON body `{"error": "...", "fields": {...}}` with a 4xx status for
//! the caller's mistakes (see [`error::ApiError`]); internal failures are logged and answered
//! with a generic 500 that reveals nothing.

pub mod error;
pub mod json;
pub mod tasks;
pub mod user;

use axum::Router;
use axum::routing::get;
use sea_orm::DatabaseConnection;

/// What API handlers need.
#[derive(Clone, Debug)]
pub struct ApiState {
    pub db: DatabaseConnection,
    pub store: queue::Store,
}

/// The `/api/1` routes, ready to nest in a router with any state.
pub fn router<S: Clone + Send + Sync + 'static>(state: ApiState) -> Router<S> {
    Router::new()
        .route("/tasks", get(tasks::list_tasks))
        .route("/tasks/{id}", get(tasks::get_task))
        .with_state(state)
}
