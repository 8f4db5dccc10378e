//! Bulk actions from the dashboard: how many people a selection reaches, and submitting an
//! action over it.
//!
//! The dashboard sends the JSON API's own request (`bulkq_types::requests::ActionRequest`),
//! checked and enqueued by `caseload::actions::submit` as the API's are, so a request means
//! the same whichever door it comes through. Both functions take JSON: a target and an
//! action are nested, which the default form encoding cannot express.

use bulkq_types::requests::{ActionRequest, MAX_STAFF_PRIORITY, TargetRequest};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;

/// The priorities the forms offer, as `(value, label)`: the staff range's ends.
pub const PRIORITIES: [(i32, &str); 3] = [
    (0, "Normal"),
    (MAX_STAFF_PRIORITY, "High"),
    (-MAX_STAFF_PRIORITY, "Low"),
];

/// The task a submitted action became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmittedTask {
    pub id: Uuid,
    /// The action as people call it, e.g. "Change status".
    pub label: String,
    /// The task's page.
    pub href: String,
}

/// Where the owner downloads a finished export.
pub fn export_file_href(task_id: Uuid) -> String {
    format!("/api/1/caseload/exports/{task_id}/file")
}

/// How many people an action over `target` would affect now: the number of distinct ids, or
/// the exact number the search matches among the people the user may act on.
#[server(endpoint = "preview_bulk_target", input = Json)]
pub async fn preview_bulk_target(target: TargetRequest) -> Result<u64, AppError> {
    crate::api::ssr::respond(ssr_impl::preview(target)).await
}

/// Validates `request` and enqueues its task, owned by and run as the user. Invalid fields
/// come back as one [`AppError::Invalid`] naming each of them (422).
///
/// `idempotency_key` names this submission: sent again with the same key (a retry, a double
/// click), it answers with the task the first one made instead of making another.
#[server(endpoint = "submit_bulk_action", input = Json)]
pub async fn submit_bulk_action(
    request: ActionRequest,
    #[server(default)] idempotency_key: Option<String>,
) -> Result<SubmittedTask, AppError> {
    crate::api::ssr::respond(ssr_impl::submit(request, idempotency_key)).await
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use std::collections::HashSet;

    use bulkq_types::actions::component_label;
    use bulkq_types::requests::FieldErrors;
    use caseload::access::Actor;
    use caseload::actions::idempotency::IdempotencyKey;
    use caseload::actions::spec::SubmitError;
    use caseload::actions::target::MAX_TARGET_IDS;
    use caseload::actions::{NodeLimits, submit as enqueue};
    use caseload::users::StaffUser;
    use queue::Task;

    use super::*;
    use crate::api::ssr::{AppState, require_user, state};

    pub async fn preview(target: TargetRequest) -> Result<u64, AppError> {
        let user = require_user().await?;
        match (target.ids, target.query) {
            (Some(ids), None) => {
                check_id_count(ids.len())?;
                Ok(ids.iter().collect::<HashSet<_>>().len() as u64)
            }
            (None, Some(filter)) => {
                caseload::search::validate_filter(&filter)?;
                let actor = Actor {
                    id: user.id,
                    role: user.role,
                };
                Ok(caseload::search::count_people(&state()?.db, &filter, &actor).await?)
            }
            _ => Err(AppError::invalid(
                "Select some people, or everyone matching a search.",
            )),
        }
    }

    pub async fn submit(
        request: ActionRequest,
        idempotency_key: Option<String>,
    ) -> Result<SubmittedTask, AppError> {
        let user = require_user().await?;
        let state = state()?;
        let key = idempotency_key
            .as_deref()
            .map(IdempotencyKey::parse)
            .transpose()
            .map_err(|problem| AppError::invalid(format!("Submission: {problem}.")))?;
        let task = submit_action(&state, &user, request, key.as_ref()).await?;
        Ok(SubmittedTask {
            id: task.id,
            label: component_label(&task.execution_component_name).to_owned(),
            href: format!("/tasks/{}", task.id),
        })
    }

    /// Validates and enqueues a bulk action for `user`: the one way in for both doors.
    pub async fn submit_action(
        state: &AppState,
        user: &StaffUser,
        request: ActionRequest,
        key: Option<&IdempotencyKey>,
    ) -> Result<Task, AppError> {
        let limits = NodeLimits {
            export_row_cap: state.bulk.export_row_cap,
        };
        let task = enqueue(&state.store, user, request, &limits, key).await?;
        tracing::info!(task = %task.id, action = %task.execution_component_name, user = %user.username, "bulk action submitted");
        Ok(task)
    }

    fn check_id_count(count: usize) -> Result<(), AppError> {
        if count == 0 || count > MAX_TARGET_IDS {
            return Err(AppError::invalid(format!(
                "Select between 1 and {MAX_TARGET_IDS} people, or all matching a search."
            )));
        }
        Ok(())
    }

    /// One mapping for both doors: the message names each field as the forms label it,
    /// `fields` as the request spells it.
    impl From<SubmitError> for AppError {
        fn from(error: SubmitError) -> Self {
            match error {
                SubmitError::Invalid(fields) => AppError::Invalid {
                    message: describe_fields(&fields),
                    fields: fields.into_iter().collect(),
                },
                SubmitError::KeyReused => AppError::Invalid {
                    message: "This submission was already sent with other details; send it \
                              again with a new key."
                        .into(),
                    fields: [(
                        "Idempotency-Key".to_owned(),
                        "already used for a different request; send a new key".to_owned(),
                    )]
                    .into(),
                },
                SubmitError::Caseload(error) => error.into(),
                SubmitError::Queue(error) => error.into(),
            }
        }
    }

    /// `reason: must not be empty` → `Reason: must not be empty.`, every field in one line,
    /// named as the forms label them.
    fn describe_fields(fields: &FieldErrors) -> String {
        fields
            .iter()
            .map(|(field, message)| format!("{}: {message}.", field_label(field)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn field_label(field: &str) -> &str {
        match field {
            "ids" | "query" => "People",
            "columns" => "Columns",
            "row_cap" => "Row limit",
            "to_status" => "New status",
            "reason" => "Reason",
            "subject" => "Subject",
            "body" => "Message",
            "cc" => "Cc",
            "run_at" => "Start at",
            "priority" => "Priority",
            other => other,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn field_errors_are_named_as_the_form_labels_them() {
            let fields = vec![
                (
                    "reason".to_owned(),
                    "a reason must have 1 to 1000 characters".to_owned(),
                ),
                ("ids".to_owned(), "name at least one person".to_owned()),
            ];
            assert_eq!(
                describe_fields(&fields),
                "Reason: a reason must have 1 to 1000 characters. People: name at least one person."
            );
        }
    }
}
