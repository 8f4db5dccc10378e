//! `GET /api/1/task-events`: server-sent events with every change to the caller's tasks (all
//! tasks for admins), fed by the queue's event stream, which on PostgreSQL includes changes
//! made on other nodes (LISTEN/NOTIFY). Dashboards update live without polling.
//!
//! A stream lives no longer than the sign-in it was opened under: every few seconds it
//! checks that its session still exists and still names a user who exists and is enabled,
//! and ends when not (sign-out, expiry, the user disabled); a role changed meanwhile
//! applies from that check on. A token's stream checks its token the same way. A user holds
//! at most a few streams per node ([`StreamLimit`]); one more is answered 429.
//!
//! When the node begins to stop ([`Draining`]) every stream sends `reconnect`, with a
//! `retry` of [`RECONNECT_AFTER`], and ends: the browser's `EventSource` reconnects by
//! itself, to another node or to this one restarted.

use std::convert::Infallible;
use std::time::Duration;

use app::api::session_store::DatabaseSessionStore;
use app::api::ssr::{AppState, SESSION_USER_ID};
use app::api::tasks::TaskUpdate;
use app::error::{AppError, ErrorBody};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use caseload::users::StaffUser;
use caseload::users::tokens::token_holder;
use futures_util::Stream;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::{Interval, MissedTickBehavior};
use tower_sessions::session::Id;
use tower_sessions::{Session, SessionStore};

use super::stream_limit::{StreamLimit, StreamSlot};
use super::user::{ApiUser, bearer_token};
use crate::draining::Draining;

/// How often an open stream checks that its sign-in still stands.
pub const SESSION_RECHECK: Duration = Duration::from_secs(2);

/// How long a page waits before it reconnects to a stopping node's successor: long enough
/// for a restarted node to listen again, short enough that progress is live again at once.
pub const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// One stream per open page; it ends when the browser goes away (axum drops it) or the
/// sign-in ends.
#[utoipa::path(get, path = "/task-events", tag = "tasks",
    responses(
        (status = 200, description = "Server-sent events: `task` (a change, as JSON), \
            `resync` (fetch afresh) and `reconnect` (the node is stopping: the stream ends, \
            connect again after `retry`)", content_type = "text/event-stream", body = String),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 429, description = "Too many open streams for this user", body = ErrorBody),
    ))]
pub async fn task_events(
    State(state): State<AppState>,
    State(limit): State<StreamLimit>,
    State(draining): State<Draining>,
    headers: HeaderMap,
    user: ApiUser,
    session: Session,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let credential = match bearer_token(&headers)? {
        Some(secret) => Credential::Token(secret.to_owned()),
        None => Credential::Session(session.id().ok_or(AppError::Unauthenticated)?),
    };
    let slot = limit.open(user.0.id).ok_or(AppError::TooManyStreams {
        limit: limit.per_user(),
    })?;
    let mut recheck = tokio::time::interval_at(
        tokio::time::Instant::now() + SESSION_RECHECK,
        SESSION_RECHECK,
    );
    recheck.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let stream = Live {
        receiver: state.store.subscribe().await?,
        sessions: DatabaseSessionStore::new(state.store.clone()),
        state,
        user: user.0,
        credential,
        recheck,
        draining: Some(draining),
        _slot: slot,
    };
    Ok(Sse::new(futures_util::stream::unfold(stream, Live::next)).keep_alive(KeepAlive::default()))
}

/// An open stream's state.
struct Live {
    receiver: Receiver<queue::QueueEvent>,
    sessions: DatabaseSessionStore,
    state: AppState,
    /// Who the stream is for, as of its last check.
    user: StaffUser,
    credential: Credential,
    recheck: Interval,
    /// The node's stop, until the stream has said `reconnect`; then `None`, and it ends.
    draining: Option<Draining>,
    /// Held while the stream is open.
    _slot: StreamSlot,
}

impl Live {
    /// The next event to send, or `None` to end the stream.
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        let draining = self.draining.take()?;
        loop {
            let received = tokio::select! {
                received = self.receiver.recv() => received,
                _ = self.recheck.tick() => {
                    self.user = self.signed_in_user().await?;
                    continue;
                }
                () = draining.begun() => {
                    let reconnect = Event::default().event("reconnect").retry(RECONNECT_AFTER);
                    return Some((Ok(reconnect.data("")), self));
                }
            };
            let event = match received {
                Ok(event) if self.user.may_see_tasks_of(event.owner_id) => {
                    match Event::default()
                        .event("task")
                        .json_data(TaskUpdate::from(&event))
                    {
                        Ok(sse) => sse,
                        Err(error) => {
                            tracing::error!(%error, "cannot encode a task update");
                            continue;
                        }
                    }
                }
                Ok(_) => continue,
                // Fell behind a burst of changes: tell the page to fetch afresh.
                Err(RecvError::Lagged(_)) => Event::default().event("resync").data(""),
                Err(RecvError::Closed) => return None,
            };
            self.draining = Some(draining);
            return Some((Ok(event), self));
        }
    }

    /// The stream's user as they are now, if its session or token still stands for them and
    /// they are enabled. A failure to tell counts as no: the browser reconnects, and signs
    /// in if it must.
    async fn signed_in_user(&self) -> Option<StaffUser> {
        let user_id = match &self.credential {
            Credential::Session(id) => {
                let record = self.sessions.load(id).await.ok()??;
                serde_json::from_value(record.data.get(SESSION_USER_ID)?.clone()).ok()?
            }
            Credential::Token(secret) => token_holder(&self.state.db, secret).await.ok()??.user.id,
        };
        if user_id != self.user.id {
            return None;
        }
        caseload::users::find_user(&self.state.db, user_id)
            .await
            .ok()?
    }
}

/// What a stream was opened with, and must still hold.
enum Credential {
    Session(Id),
    /// A token's secret.
    Token(String),
}
