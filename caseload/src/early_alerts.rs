//! Early alerts: one batch of people given an alert, closing an alert, the open alerts a
//! person has, and the reasons admins manage.
//!
//! Idempotent per task as a status change is: alerts are inserted with `ON CONFLICT
//! (task_id, person_id) DO NOTHING … RETURNING person_id`, so a batch run again after a
//! crash raises nobody's alert twice. Each alert keeps the coach the person had when it was
//! raised: the coach [`crate::coach_notices`] tells.

use std::collections::HashMap;

use bulkq_types::alerts::{AlertContent, AlertReason, EarlyAlert, MAX_REASON_NAME_LEN};
use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::access::{Actor, BatchReport, Targets, check_batch_size, read_and_sort};
use crate::store;
use crate::store::entity::early_alert as alert;
use bulkq_types::text::{Lines, control_character_problem};

/// Raises `content`'s alert for the people `person_ids` names, acting as `actor` for task
/// `task_id`. Call it inside the batch transaction that also records the task's checkpoint.
/// People outside the actor's scope and unknown ids are reported, not touched. The people
/// are read, not locked: an alert keeps the coach each had when its batch read them, as it
/// would had a concurrent move come a moment later.
pub async fn raise<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    content: &AlertContent,
    person_ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    check_batch_size(person_ids)?;
    let (targets, coaches) = read_and_sort(db, actor, person_ids).await?;
    let people: Vec<(Uuid, Option<Uuid>)> = targets
        .allowed
        .iter()
        .map(|person_id| (*person_id, coaches[person_id]))
        .collect();
    let raised = store::alerts::raise_once(db, task_id, actor, content, &people, now).await?;
    Ok(BatchReport::for_targets(&targets, raised))
}

/// [`raise`] for people already read in the batch's transaction, all within the actor's
/// scope, each with their coach: a saved query's batch, which its walk has just read.
/// Reading them again cost a tenth of an alert of everyone on SQLite.
pub(crate) async fn raise_for_read<C: ConnectionTrait>(
    db: &C,
    task_id: Uuid,
    actor: &Actor,
    content: &AlertContent,
    people: &[(Uuid, Option<Uuid>)],
    now: DateTime<Utc>,
) -> Result<BatchReport, CaseloadError> {
    let raised = store::alerts::raise_once(db, task_id, actor, content, people, now).await?;
    let ids = people.iter().map(|(person_id, _)| *person_id).collect();
    Ok(BatchReport::for_targets(&Targets::all_allowed(ids), raised))
}

/// Closes the open alert `alert_id` as `actor`, who must be allowed the alert's person.
/// Closing a closed alert changes nothing; an alert the actor may not see is not found.
pub async fn close<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    alert_id: Uuid,
    now: DateTime<Utc>,
) -> Result<EarlyAlert, CaseloadError> {
    let row = store::alerts::find(db, alert_id)
        .await?
        .ok_or(CaseloadError::NotFound)?;
    let (targets, _) = read_and_sort(db, actor, &[row.person_id]).await?;
    if targets.allowed.is_empty() {
        return Err(CaseloadError::NotFound);
    }
    if row.closed_at.is_none() {
        store::alerts::close(db, alert_id, actor.id, now).await?;
    }
    let row = store::alerts::find(db, alert_id)
        .await?
        .ok_or(CaseloadError::NotFound)?;
    Ok(view(row, &reasons(db, true).await?))
}

/// A person's alerts, open ones first, newest first.
pub async fn alerts_of<C: ConnectionTrait>(
    db: &C,
    person_id: Uuid,
) -> Result<Vec<EarlyAlert>, CaseloadError> {
    let names = reasons(db, true).await?;
    Ok(store::alerts::of_person(db, person_id)
        .await?
        .into_iter()
        .map(|row| view(row, &names))
        .collect())
}

/// How many open alerts each of `person_ids` has (people without any are left out).
pub async fn open_counts<C: ConnectionTrait>(
    db: &C,
    person_ids: &[Uuid],
) -> Result<HashMap<Uuid, u32>, CaseloadError> {
    if person_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let counts = store::alerts::open_counts(db, person_ids).await?;
    Ok(counts
        .into_iter()
        .map(|(id, open)| (id, u32::try_from(open).unwrap_or(u32::MAX)))
        .collect())
}

/// An alert as staff see it, its reasons named from `names`.
fn view(row: alert::Model, names: &[AlertReason]) -> EarlyAlert {
    let reasons: Vec<String> = row
        .reasons
        .split(',')
        .filter(|code| !code.is_empty())
        .map(str::to_owned)
        .collect();
    let reason_names = reasons
        .iter()
        .map(|code| {
            names
                .iter()
                .find(|reason| &reason.code == code)
                .map_or_else(|| code.clone(), |reason| reason.name.clone())
        })
        .collect();
    EarlyAlert {
        id: row.id,
        person_id: row.person_id,
        task_id: row.task_id,
        course: row.course,
        reasons,
        reason_names,
        suggestion: row.suggestion,
        comment: row.comment,
        raised_at: row.raised_at,
        closed_at: row.closed_at,
    }
}

/// The reasons, in pick-list order; retired ones only if `with_retired`.
pub async fn reasons<C: ConnectionTrait>(
    db: &C,
    with_retired: bool,
) -> Result<Vec<AlertReason>, CaseloadError> {
    Ok(store::alert_reasons::list(db, with_retired)
        .await?
        .into_iter()
        .map(|row| AlertReason {
            code: row.code,
            name: row.name,
            retired: row.retired_at.is_some(),
        })
        .collect())
}

/// Checks that every code of `codes` names a reason in use; the message names the others.
pub async fn check_reasons<C: ConnectionTrait>(
    db: &C,
    codes: &[String],
) -> Result<Result<(), String>, CaseloadError> {
    let in_use: Vec<String> = reasons(db, false)
        .await?
        .into_iter()
        .map(|reason| reason.code)
        .collect();
    let unknown: Vec<&str> = codes
        .iter()
        .filter(|code| !in_use.contains(code))
        .map(String::as_str)
        .collect();
    Ok(match unknown.is_empty() {
        true => Ok(()),
        false => Err(format!("no reason in use is called {}", unknown.join(", "))),
    })
}

/// Adds a reason named `name` (its code made from the name), or brings a retired reason of
/// that code back under the new name; returns it.
pub async fn add_reason<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<AlertReason, CaseloadError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_REASON_NAME_LEN {
        return Err(CaseloadError::Invalid(format!(
            "name: a reason has 1 to {MAX_REASON_NAME_LEN} characters"
        )));
    }
    if let Some(problem) = control_character_problem(name, Lines::One) {
        return Err(CaseloadError::Invalid(format!("name: {problem}")));
    }
    let code = AlertReason::code_for(name);
    if code.is_empty() {
        return Err(CaseloadError::Invalid(
            "name: a reason needs at least one letter or digit".into(),
        ));
    }
    match store::alert_reasons::find(db, code.clone()).await? {
        Some(row) if row.retired_at.is_none() => {
            return Err(CaseloadError::Invalid(format!(
                "name: the reason {:?} exists already",
                row.name
            )));
        }
        Some(row) => store::alert_reasons::bring_back(db, row, name).await?,
        None => store::alert_reasons::insert(db, code.clone(), name).await?,
    }
    Ok(AlertReason {
        code,
        name: name.to_owned(),
        retired: false,
    })
}

/// Retires the reason `code`: new alerts cannot give it, alerts that gave it keep it.
pub async fn retire_reason<C: ConnectionTrait>(
    db: &C,
    code: &str,
    now: DateTime<Utc>,
) -> Result<(), CaseloadError> {
    match store::alert_reasons::retire(db, code, now).await? {
        0 => Err(CaseloadError::NotFound),
        _ => Ok(()),
    }
}
