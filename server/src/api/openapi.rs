//! The API's contract as an OpenAPI 3 document, generated from the handlers' annotations and
//! the request and reply types themselves, so it cannot drift from the code; served at
//! `GET /api/1/openapi.json` and checked against the running server by schemathesis in
//! `make test`.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{bulk, events, periodic, tasks};
use crate::web::SESSION_COOKIE;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "bulkq",
        description = "Bulk actions on a caseload, run by a transactional task queue. Sign in \
            through the dashboard (or `POST /api/sign_in`) and send its session cookie."
    ),
    servers((url = "/api/1")),
    paths(
        tasks::list_tasks,
        tasks::get_task,
        tasks::cancel_task,
        tasks::act_on_tasks,
        periodic::list_periodic_jobs,
        periodic::run_periodic_job,
        periodic::pause_periodic_job,
        periodic::resume_periodic_job,
        events::task_events,
        bulk::post_export,
        bulk::get_export_file,
        bulk::post_status_change,
        bulk::post_watch,
        bulk::post_unwatch,
        bulk::post_email,
    ),
    modifiers(&SessionCookie),
    security(("session" = []))
)]
pub struct ApiDoc;

/// Declares the session cookie every operation needs.
struct SessionCookie;

impl Modify for SessionCookie {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(SESSION_COOKIE))),
        );
    }
}

/// `GET /api/1/openapi.json`.
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
