//! Server-side helpers shared by every server function: the application state in context,
//! the signed-in user, and turning domain errors into [`AppError`]s with the right status.

use bulkq_types::audit::AuditAct;
use bulkq_types::text::{Lines, control_character_problem};
use caseload::audit::Actor;
use caseload::users::StaffUser;
use leptos::prelude::*;
use leptos_axum::ResponseOptions;
use sea_orm::DatabaseConnection;
use tower_sessions::Session;
use uuid::Uuid;

use crate::api::login_throttle::ClientAddress;
use crate::error::AppError;

/// The session key holding the signed-in staff user's id.
pub const SESSION_USER_ID: &str = "user_id";
/// The session key present while the signed-in user must choose a new password, so the
/// page gate can send them to their account page without reading the database.
pub const SESSION_MUST_CHANGE_PASSWORD: &str = "must_change_password";

/// What server functions need from the running server; provided as Leptos context by the
/// server for both page rendering and server-function calls.
#[derive(Clone, Debug)]
pub struct AppState {
    pub db: DatabaseConnection,
    /// The task queue: enqueueing, task lists and the stream of task changes.
    pub store: queue::Store,
    /// Sign-in attempts per username, shared by every request to this node.
    pub login_throttle: std::sync::Arc<crate::api::login_throttle::LoginThrottle>,
    pub bulk: BulkSettings,
    /// Cookies set by server functions (the known-device cookie) are `Secure`.
    pub secure_cookies: bool,
}

/// How this node runs bulk actions, as far as submitting and downloading need to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BulkSettings {
    /// Where export files are written (see `caseload::actions::export_file`).
    pub exports_dir: std::path::PathBuf,
    /// The most rows one export may have.
    pub export_row_cap: u64,
    /// How long a finished export stays downloadable.
    pub export_retention: std::time::Duration,
    /// The largest people file an admin may upload for import.
    pub import_max_bytes: u64,
}

impl Default for BulkSettings {
    fn default() -> Self {
        Self {
            exports_dir: "data/exports".into(),
            export_row_cap: caseload::export::DEFAULT_ROW_CAP,
            export_retention: caseload::actions::export_files::EXPORT_RETENTION_DEFAULT,
            import_max_bytes: caseload::people_import::upload::MAX_BYTES_DEFAULT,
        }
    }
}

impl AppState {
    pub fn new(db: DatabaseConnection, store: queue::Store, bulk: BulkSettings) -> Self {
        Self {
            db,
            store,
            login_throttle: Default::default(),
            bulk,
            secure_cookies: false,
        }
    }
}

/// The database connection from context.
pub fn db() -> Result<DatabaseConnection, AppError> {
    state().map(|state| state.db)
}

/// The application state from context.
pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| internal("AppState is missing from the Leptos context"))
}

/// The request's session.
pub async fn session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>()
        .await
        .map_err(|e| internal(format!("no session layer: {e}")))
}

/// The signed-in user, or `None` for an anonymous request.
pub async fn current_user() -> Result<Option<StaffUser>, AppError> {
    session_user(&session().await?, &db()?).await
}

/// The user `session` is signed in as, for both doors: `None` when it is anonymous, or when
/// the user was removed or disabled since signing in (then the session is worthless).
pub async fn session_user(
    session: &Session,
    db: &DatabaseConnection,
) -> Result<Option<StaffUser>, AppError> {
    let Some(user_id) = session
        .get::<Uuid>(SESSION_USER_ID)
        .await
        .map_err(|e| internal(format!("reading the session failed: {e}")))?
    else {
        return Ok(None);
    };
    Ok(caseload::users::find_user(db, user_id).await?)
}

/// The signed-in user, or [`AppError::Unauthenticated`]; a user who must choose a new
/// password gets [`AppError::PasswordChangeRequired`] for everything else.
pub async fn require_user() -> Result<StaffUser, AppError> {
    let user = current_user().await?.ok_or(AppError::Unauthenticated)?;
    if user.must_change_password {
        return Err(AppError::PasswordChangeRequired);
    }
    Ok(user)
}

/// The signed-in admin, or why not.
pub async fn require_admin() -> Result<StaffUser, AppError> {
    crate::api::admin::ssr_impl::admin_only(require_user().await?)
}

/// The client of the request being answered, as the server's middleware determined it.
pub fn request_client() -> ClientAddress {
    client_of(use_context::<http::request::Parts>().as_ref())
}

/// The client address the middleware stored in a request's parts (none in tests that build
/// requests by hand).
pub fn client_of(parts: Option<&http::request::Parts>) -> ClientAddress {
    parts
        .and_then(|parts| parts.extensions.get::<ClientAddress>().copied())
        .unwrap_or(ClientAddress(None))
}

/// `user` acting from `client`, as the audit trail names them.
pub fn actor(user: &StaffUser, client: ClientAddress) -> Actor {
    Actor::user(user, client.0)
}

/// Records in the audit trail an act the queue has committed on its own, in a write
/// transaction of its own just after.
pub async fn audit_after(
    app: &AppState,
    actor: &Actor,
    act: AuditAct,
    targets: &[impl std::fmt::Display],
    detail: impl Into<String>,
) -> Result<(), AppError> {
    let txn = app
        .store
        .begin_write_as(queue::WriteClass::Interactive)
        .await
        .map_err(internal)?;
    caseload::audit::record(&*txn, actor, act, targets, detail).await?;
    txn.commit().await.map_err(internal)
}

/// Runs a server function's body and, when it fails, sets the response status to match the
/// error, so API clients and the browser see a 4xx/5xx and not a 200 carrying an error.
pub async fn respond<T>(body: impl Future<Output = Result<T, AppError>>) -> Result<T, AppError> {
    let result = body.await;
    if let Err(error) = &result
        && let Some(response) = use_context::<ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(error.status_code())
    {
        response.set_status(status);
    }
    result
}

/// Longest reason accepted for abandoning tasks.
const MAX_ABANDON_REASON_LEN: usize = 500;

/// An admin's reason for abandoning tasks, trimmed, or why it is refused.
pub fn abandon_reason(reason: &str) -> Result<&str, AppError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_ABANDON_REASON_LEN {
        return Err(AppError::invalid(format!(
            "Give a reason of 1 to {MAX_ABANDON_REASON_LEN} characters."
        )));
    }
    match control_character_problem(reason, Lines::Many) {
        Some(problem) => Err(AppError::invalid(format!("Reason: {problem}."))),
        None => Ok(reason),
    }
}

/// An action's name (a task component) from a request, trimmed; empty means every action.
pub fn action_name(action: &str) -> Result<&str, AppError> {
    let action = action.trim();
    if action.chars().count() > MAX_ACTION_NAME_LEN
        || control_character_problem(action, Lines::One).is_some()
    {
        return Err(AppError::invalid("No action is called that."));
    }
    Ok(action)
}

/// Longest action name accepted (the names are like `caseload.program_status_change`).
const MAX_ACTION_NAME_LEN: usize = 100;

/// Logs an internal failure in full and returns the generic error the user sees.
pub fn internal(detail: impl std::fmt::Display) -> AppError {
    tracing::error!(%detail, "internal error answering a request");
    AppError::Internal
}

impl From<queue::QueueError> for AppError {
    fn from(error: queue::QueueError) -> Self {
        match error {
            queue::QueueError::Invalid(message) => AppError::BadRequest(message),
            other => internal(other),
        }
    }
}

impl From<caseload::CaseloadError> for AppError {
    fn from(error: caseload::CaseloadError) -> Self {
        match error {
            caseload::CaseloadError::Invalid(message) => AppError::invalid(message),
            caseload::CaseloadError::UsernameTaken(name) => {
                AppError::invalid(format!("the username {name:?} is already taken"))
            }
            caseload::CaseloadError::UserDisabled(name) => {
                AppError::Forbidden(format!("the account of {name:?} is disabled"))
            }
            other => internal(other),
        }
    }
}
