//! The API's contract as an OpenAPI 3 document, generated from the handlers' annotations and
//! the request and reply types themselves, so it cannot drift from the code; served at
//! `GET /api/1/openapi.json` and checked against the running server by schemathesis in
//! `make test`.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{alerts, bulk, events, outcomes, people, periodic, tasks};
use crate::web::SESSION_COOKIE;

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "bulkq",
        description = "Bulk actions on a caseload, run by a transactional task queue. Programs \
            send a personal token (made on the dashboard's Account page) as \
            `Authorization: Bearer <token>`; a read-only token may only read. The dashboard's \
            session cookie works too."
    ),
    servers((url = "/api/1")),
    paths(
        tasks::list_tasks,
        tasks::get_task,
        outcomes::get_task_outcomes,
        tasks::cancel_task,
        tasks::reschedule_task,
        tasks::act_on_tasks,
        periodic::list_periodic_jobs,
        periodic::run_periodic_job,
        periodic::pause_periodic_job,
        periodic::resume_periodic_job,
        events::task_events,
        bulk::get_export_file,
        people::upsert_people,
        people::retire_people,
        alerts::list_reasons,
        alerts::add_reason,
        alerts::retire_reason,
        alerts::person_alerts,
        alerts::close_alert,
    ),
    modifiers(&Credentials),
    security(("session" = []), ("token" = []))
)]
pub struct ApiDoc;

/// Declares the two ways to say who is calling: a personal token or the session cookie.
struct Credentials;

impl Modify for Credentials {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A personal API token (`bq_…`)"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(SESSION_COOKIE))),
        );
    }
}

/// The whole document: [`ApiDoc`] with every bulk action's endpoint.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi().merge_from(bulk::BulkActionPaths::openapi())
}

/// `GET /api/1/openapi.json`.
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}

#[cfg(test)]
mod tests {
    use bulkq_types::actions::ActionKind;

    use super::*;

    #[test]
    fn every_action_is_documented_where_it_is_routed() {
        let doc = document();
        for kind in ActionKind::ALL {
            let documented = doc.paths.paths.get(kind.api_path());
            assert!(
                documented.and_then(|item| item.post.as_ref()).is_some(),
                "{kind:?}: POST {} is in the contract",
                kind.api_path()
            );
        }
    }
}
