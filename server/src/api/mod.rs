//! The versioned JSON API (`/api/1/...`) for programs and scripts: the bulk actions and the
//! status of the tasks they create, and people from the school's records (admins). A
//! personal token or the dashboard's sign-in session says who calls. Its contract
//! is served at `/api/1/openapi.json` ([`openapi`]).
//!
//! Every failure is `app::error::AppError`, the dashboard's error too, sent as a JSON body
//! `{"error": "...", "fields": {...}}` with a 4xx status for the caller's mistakes; internal
//! failures are logged and answered with a generic 500 that reveals nothing.

pub mod alerts;
pub mod bulk;
pub mod events;
pub mod json;
pub mod openapi;
pub mod outcomes;
pub mod people;
pub mod periodic;
pub mod stream_limit;
pub mod tasks;
pub mod user;

use app::api::ssr::AppState;
use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};
use bulkq_types::actions::ActionKind;

use stream_limit::StreamLimit;

use crate::draining::Draining;

/// What the API's handlers share.
#[derive(Clone, FromRef)]
pub struct ApiState {
    pub app: AppState,
    /// Live update streams open per user on this node.
    pub streams: StreamLimit,
    /// The node's stop, which ends every live stream.
    pub draining: Draining,
}

/// The `/api/1` routes, ready to nest in a router with any state.
pub fn router<S: Clone + Send + Sync + 'static>(state: ApiState) -> Router<S> {
    let routes = Router::new()
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/tasks", get(tasks::list_tasks))
        .route("/tasks/act", post(tasks::act_on_tasks))
        .route("/periodic-jobs", get(periodic::list_periodic_jobs))
        .route(
            "/periodic-jobs/{name}/run",
            post(periodic::run_periodic_job),
        )
        .route(
            "/periodic-jobs/{name}/pause",
            post(periodic::pause_periodic_job),
        )
        .route(
            "/periodic-jobs/{name}/resume",
            post(periodic::resume_periodic_job),
        )
        .route("/tasks/{id}", get(tasks::get_task))
        .route("/tasks/{id}/outcomes", get(outcomes::get_task_outcomes))
        .route("/tasks/{id}/cancel", post(tasks::cancel_task))
        .route("/tasks/{id}/schedule", post(tasks::reschedule_task))
        .route("/task-events", get(events::task_events))
        .route("/caseload/exports/{id}/file", get(bulk::get_export_file))
        .route("/people", post(people::upsert_people))
        .route("/people/retire", post(people::retire_people))
        .route("/people/{id}/early-alerts", get(alerts::person_alerts))
        .route("/early-alerts/{id}/close", post(alerts::close_alert))
        .route(
            "/alert-reasons",
            get(alerts::list_reasons).post(alerts::add_reason),
        )
        .route("/alert-reasons/{code}/retire", post(alerts::retire_reason));
    ActionKind::ALL
        .into_iter()
        .fold(routes, |routes, kind| {
            routes.route(kind.api_path(), bulk::submit_route(kind))
        })
        .with_state(state)
}
