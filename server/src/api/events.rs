//! `GET /api/1/task-events`: server-sent events with every change to the caller's tasks (all
//! tasks for admins), fed by the queue's event stream, which on PostgreSQL includes changes
//! made on other nodes (LISTEN/NOTIFY). Dashboards update live without polling.

use std::convert::Infallible;

use app::api::ssr::AppState;
use app::api::tasks::TaskUpdate;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::user::ApiUser;

/// One stream per open page; it ends when the browser goes away (axum drops it).
pub async fn task_events(
    State(state): State<AppState>,
    user: ApiUser,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = state.store.subscribe();
    let stream =
        futures_util::stream::unfold((receiver, user), |(mut receiver, user)| async move {
            loop {
                let event = match receiver.recv().await {
                    Ok(event) if user.may_see(event.owner_id) => {
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
                return Some((Ok(event), (receiver, user)));
            }
        });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
