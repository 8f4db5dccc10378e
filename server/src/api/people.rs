//! People from the school's own records, for admins' programs: upsert a batch keyed by
//! school id, retire people the records no longer have. Each request is one transaction:
//! all of it or, with a 422 naming every bad record's fields, none of it.

use app::api::admin::ssr_impl::admin_only;
use app::api::ssr::{AppState, actor, internal};
use app::error::{AppError, ErrorBody};
use axum::Json;
use axum::extract::State;
use bulkq_types::audit::AuditAct;
use bulkq_types::person_records::{
    MAX_RECORDS_PER_REQUEST, PeopleUpsert, SyncCounts, SyncOutcome, school_id_problem,
};
use caseload::audit::record;
use caseload::people_sync::{apply, resolve, retire};
use queue::WriteClass;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::json::ApiJson;
use super::user::ApiUser;

/// At most this many bad fields are named in a 422; the message says how many more.
const PROBLEMS_NAMED: usize = 100;

/// What a batch did, in all and record by record (in the order sent).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PeopleSynced {
    pub counts: SyncCounts,
    pub outcomes: Vec<SyncOutcome>,
}

/// People to retire, by school id.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PeopleRetire {
    /// 1 to 5,000 school ids.
    pub school_ids: Vec<String>,
}

/// What retiring did; school ids that name nobody are listed, not an error.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PeopleRetired {
    pub counts: SyncCounts,
    pub unknown: Vec<String>,
}

/// `POST /api/1/people`.
#[utoipa::path(post, path = "/people", tag = "people", request_body = PeopleUpsert,
    responses(
        (status = 200, description = "Every record applied; `outcomes` in the order sent. \
            The same request again counts every record unchanged", body = PeopleSynced),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin, a read-only token, or a cross-site \
            request from a browser", body = ErrorBody),
        (status = 413, description = "The body is over 2 MB", body = ErrorBody),
        (status = 415, description = "The body is not declared as JSON", body = ErrorBody),
        (status = 422, description = "Nothing applied: each bad record's fields are named \
            in `fields` as `people[i].field`", body = ErrorBody),
    ))]
pub async fn upsert_people(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<PeopleUpsert>,
) -> Result<Json<PeopleSynced>, AppError> {
    let ApiUser(user, client) = user;
    let admin = admin_only(user)?;
    check_count(request.people.len(), "people")?;
    let txn = begin(&state).await?;
    let resolved = resolve(&*txn, &request.people).await?;
    let mut problems = Vec::new();
    let mut records = Vec::with_capacity(resolved.len());
    for (index, record) in resolved.into_iter().enumerate() {
        match record {
            Ok(record) => records.push(record),
            Err(fields) => problems.extend(
                fields
                    .into_iter()
                    .map(|(field, problem)| (format!("people[{index}].{field}"), problem)),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(named_problems(problems));
    }
    let outcomes = apply(&*txn, admin.id, &records, None, chrono::Utc::now()).await?;
    let mut counts = SyncCounts::default();
    outcomes.iter().for_each(|outcome| counts.add(*outcome));
    let school_ids: Vec<&str> = request.people.iter().map(|p| p.school_id.trim()).collect();
    let by = actor(&admin, client);
    record(
        &*txn,
        &by,
        AuditAct::PeopleUpsert,
        &school_ids,
        counts.words(),
    )
    .await?;
    txn.commit().await.map_err(internal)?;
    if counts.created > 0 {
        // A program filling an empty caseload would otherwise be planned as if it were
        // still empty until the next prune (ADR 0083); a no-op unless a table grew tenfold.
        state.store.refresh_planner_statistics_or_warn().await;
    }
    tracing::info!(admin = %admin.username, ?counts, "people brought in step");
    Ok(Json(PeopleSynced { counts, outcomes }))
}

/// `POST /api/1/people/retire`.
#[utoipa::path(post, path = "/people/retire", tag = "people", request_body = PeopleRetire,
    responses(
        (status = 200, description = "Moved to RETIRED (history kept); already retired \
            counts unchanged", body = PeopleRetired),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Not an admin, a read-only token, or a cross-site \
            request from a browser", body = ErrorBody),
        (status = 413, description = "The body is over 2 MB", body = ErrorBody),
        (status = 415, description = "The body is not declared as JSON", body = ErrorBody),
        (status = 422, description = "No school ids, or too many", body = ErrorBody),
    ))]
pub async fn retire_people(
    State(state): State<AppState>,
    user: ApiUser,
    ApiJson(request): ApiJson<PeopleRetire>,
) -> Result<Json<PeopleRetired>, AppError> {
    let ApiUser(user, client) = user;
    let admin = admin_only(user)?;
    check_count(request.school_ids.len(), "school_ids")?;
    let school_ids: Vec<String> = request
        .school_ids
        .iter()
        .map(|id| id.trim().to_owned())
        .collect();
    let problems: Vec<(String, String)> = school_ids
        .iter()
        .enumerate()
        .filter_map(|(index, id)| {
            let problem = school_id_problem(id)?;
            Some((format!("school_ids[{index}]"), problem))
        })
        .collect();
    if !problems.is_empty() {
        return Err(named_problems(problems));
    }
    let txn = begin(&state).await?;
    let outcomes = retire(&*txn, admin.id, &school_ids, None, chrono::Utc::now()).await?;
    let mut counts = SyncCounts::default();
    let mut unknown = Vec::new();
    for (school_id, outcome) in school_ids.iter().zip(outcomes) {
        match outcome {
            Some(outcome) => counts.add(outcome),
            None => unknown.push(school_id.clone()),
        }
    }
    let by = actor(&admin, client);
    let detail = format!("{}, {} unknown", counts.words(), unknown.len());
    record(&*txn, &by, AuditAct::PeopleRetire, &school_ids, detail).await?;
    txn.commit().await.map_err(internal)?;
    tracing::info!(admin = %admin.username, ?counts, unknown = unknown.len(), "people retired");
    Ok(Json(PeopleRetired { counts, unknown }))
}

/// A write transaction of a person's request.
async fn begin(state: &AppState) -> Result<queue::WriteTransaction, AppError> {
    state
        .store
        .begin_write_as(WriteClass::Interactive)
        .await
        .map_err(internal)
}

/// A batch must name 1 to [`MAX_RECORDS_PER_REQUEST`] things.
fn check_count(count: usize, field: &str) -> Result<(), AppError> {
    if (1..=MAX_RECORDS_PER_REQUEST).contains(&count) {
        return Ok(());
    }
    Err(AppError::invalid_fields([(
        field.to_owned(),
        format!("send 1 to {MAX_RECORDS_PER_REQUEST} at a time"),
    )]))
}

/// A 422 naming the first [`PROBLEMS_NAMED`] problems and counting the rest.
fn named_problems(problems: Vec<(String, String)>) -> AppError {
    let more = problems.len().saturating_sub(PROBLEMS_NAMED);
    let mut error = AppError::invalid_fields(problems.into_iter().take(PROBLEMS_NAMED));
    if more > 0
        && let AppError::Invalid { message, .. } = &mut error
    {
        message.push_str(&format!(" And {more} more problems."));
    }
    error
}
