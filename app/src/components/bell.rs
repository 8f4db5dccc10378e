//! The bell in the top bar: how many of the user's tasks ended since they last looked, kept
//! live by the task stream, and, opened, the latest ends with a link to each. Opening it
//! marks what it shows read.

use bulkq_types::TaskStatus;
use bulkq_types::actions::component_label;
use bulkq_types::task::TaskView;
use leptos::prelude::*;

use crate::api::notices::{MarkNoticesRead, Notices, get_notices};
use crate::format;
use crate::live::{LiveMessage, REFETCH_AT_MOST_EVERY, coalesced, use_task_stream};

/// Renders the bell and, while open, its list.
#[component]
pub fn Bell() -> impl IntoView {
    let reload = RwSignal::new(0u64);
    let mark_read = ServerAction::<MarkNoticesRead>::new();
    let notices = Resource::new(
        move || (reload.get(), mark_read.version().get()),
        |_| get_notices(),
    );
    let open = RwSignal::new(false);
    let refetch = coalesced(REFETCH_AT_MOST_EVERY, move || reload.update(|n| *n += 1));
    // A task ending (or a reconnect, which may have missed one) may change the count.
    use_task_stream(move |message| match message {
        LiveMessage::Task(update) if !update.status.is_terminal() => {}
        _ => refetch(),
    });
    let toggle = move |_| {
        let opening = !open.get_untracked();
        open.set(opening);
        let shown = notices.get_untracked().and_then(Result::ok);
        if let Some(shown) = shown.filter(|_| opening)
            && shown.unread > 0
            && let Some(up_to) = shown
                .tasks
                .first()
                .and_then(|task| task.workflow_stopped_date)
        {
            mark_read.dispatch(MarkNoticesRead { up_to });
        }
    };
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                notices.await.ok().map(|shown| {
                    let badge = shown.badge();
                    let label = if badge.is_empty() {
                        "Finished tasks".to_owned()
                    } else {
                        format!("Finished tasks, {badge} new")
                    };
                    view! {
                        <div class="bell">
                            <button
                                type="button"
                                class="secondary bell-button"
                                data-testid="bell"
                                aria-label=label
                                aria-expanded=move || open.get().to_string()
                                aria-controls="bell-panel"
                                on:click=toggle
                            >
                                <span aria-hidden="true">"🔔"</span>
                                {(!badge.is_empty()).then(|| view! {
                                    <span class="bell-count" data-testid="bell-count">{badge.clone()}</span>
                                })}
                            </button>
                            <Show when=move || open.get()>
                                <BellPanel shown=shown.clone() />
                            </Show>
                        </div>
                    }
                })
            })}
        </Transition>
    }
}

/// The list the bell opens: the latest ends, the unread ones marked.
#[component]
fn BellPanel(shown: Notices) -> impl IntoView {
    let unread = shown.unread as usize;
    view! {
        <div id="bell-panel" class="bell-panel" role="region" aria-label="Your finished tasks">
            {if shown.tasks.is_empty() {
                view! { <p class="empty">"None of your tasks has ended in the last week."</p> }.into_any()
            } else {
                view! {
                    <ul>
                        {shown.tasks.into_iter().enumerate().map(|(i, task)| view! {
                            <BellItem task unread=i < unread />
                        }).collect_view()}
                    </ul>
                }
                .into_any()
            }}
            <a href="/tasks">"All my tasks"</a>
        </div>
    }
}

#[component]
fn BellItem(task: TaskView, unread: bool) -> impl IntoView {
    let status: TaskStatus = task.workflow_status;
    let ended = task
        .workflow_stopped_date
        .map(|at| at.to_rfc3339())
        .unwrap_or_default();
    view! {
        <li class:unread=unread data-testid="bell-item" data-task-id=task.id.to_string()>
            <a href=format!("/tasks/{}", task.id)>{component_label(&task.action).to_owned()}</a>
            " "
            <span class=format!("badge badge-{}", status.as_str().to_lowercase())>{status.as_str()}</span>
            <span class="bell-summary">{task.summary}</span>
            <time datetime=ended.clone()>{format::minute(&ended)}</time>
        </li>
    }
}
