//! "My tasks": the signed-in user's tasks, newest first, kept current by the server's live
//! task stream: statuses and progress bars move without a reload, and a finished export
//! offers its file.

use std::collections::HashMap;

use bulkq_types::TaskStatus;
use bulkq_types::actions::{EXPORT, action_label};
use bulkq_types::task::TaskView;
use bulkq_types::words::progress_words;
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use crate::api::bulk::export_file_href;
use crate::api::tasks::{TaskUpdate, list_my_tasks};
use crate::components::feedback::ErrorMessage;
use crate::components::scheduled_for::ScheduledFor;
use crate::components::top_bar::TopBar;
use crate::format;
use crate::live::{LiveMessage, use_task_stream};

/// Renders the user's tasks with live status and progress.
#[component]
pub fn MyTasksPage() -> impl IntoView {
    // Bumped to fetch the list again: a task appeared that the page has not seen, one
    // finished (the list has its finishing time), or the stream (re)connected and may have
    // missed changes.
    let reload = RwSignal::new(0u64);
    let tasks = Resource::new(move || reload.get(), |_| list_my_tasks(0));
    let live: RwSignal<HashMap<Uuid, TaskUpdate>> = RwSignal::new(HashMap::new());

    use_task_stream(move |message| match message {
        LiveMessage::Task(update) => {
            let known = tasks
                .get_untracked()
                .and_then(Result::ok)
                .is_some_and(|page| page.tasks.iter().any(|t| t.id == update.task_id));
            if known && !update.status.is_terminal() {
                live.update(|live| {
                    live.insert(update.task_id, update);
                });
            } else {
                reload.update(|n| *n += 1);
            }
        }
        LiveMessage::Resync => reload.update(|n| *n += 1),
    });

    view! {
        <Title text="My tasks · bulkq" />
        <TopBar />
        <main>
            <h1>"My tasks"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match tasks.await {
                        Ok(page) if page.tasks.is_empty() => {
                            view! {
                                <p class="empty" data-testid="tasks-empty">
                                    "You have no tasks yet. Select people on the "
                                    <a href="/">"caseload"</a>
                                    " and choose a bulk action."
                                </p>
                            }
                                .into_any()
                        }
                        Ok(page) => {
                            live.set(HashMap::new());
                            view! {
                                <p>{format::plural(page.total, "task", "tasks")}</p>
                                <ul class="task-list">
                                    {page
                                        .tasks
                                        .into_iter()
                                        .map(|task| view! { <TaskItem task live /> })
                                        .collect_view()}
                                </ul>
                            }
                                .into_any()
                        }
                        Err(error) => {
                            view! { <ErrorMessage error /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

/// One task: action, target size, status badge, progress bar, times, and the file of a
/// finished export; status and progress follow the live stream.
#[component]
fn TaskItem(task: TaskView, live: RwSignal<HashMap<Uuid, TaskUpdate>>) -> impl IntoView {
    let id = task.id;
    let initial = TaskUpdate {
        task_id: id,
        status: task.workflow_status,
        progress_done: task.progress_done,
        progress_total: task.progress_total,
    };
    // What the live stream last said about this task, else what the page was rendered with.
    let current = Memo::new(move |_| {
        live.with(|live| live.get(&id).cloned())
            .unwrap_or_else(|| initial.clone())
    });
    let status = move || current.get().status;
    let progress = move || {
        let update = current.get();
        match update.progress_total {
            Some(total) if total > 0 => (update.progress_done, total),
            // Without a known total, only success shows a full bar.
            _ if update.status == TaskStatus::Completed => (1, 1),
            _ => (0, 1),
        }
    };
    // A query's size is known once the task has counted it, at its start.
    let target = move || match current.get().progress_total {
        Some(total) => format::plural(total.max(0) as u64, "person", "people"),
        None => "people not counted yet".to_owned(),
    };
    let done = move || {
        let update = current.get();
        progress_words(update.status, update.progress_done, update.progress_total)
    };
    let is_export = task.action == EXPORT;
    let export_expired = task.export_expired();
    let scheduled = task.is_scheduled();
    let run_at = task.run_at.to_rfc3339();
    let created = task.created_date.to_rfc3339();
    view! {
        <li class="task" data-task-id=id.to_string()>
            <div class="task-head">
                <a class="task-action" href=format!("/tasks/{id}")>{action_label(&task.action).to_owned()}</a>
                <span class="task-target" data-testid="task-target">{target}</span>
                <span class=move || format!("badge badge-{}", status().as_str().to_lowercase()) data-testid="task-status">
                    {move || status().as_str()}
                </span>
            </div>
            <p class="task-summary" data-testid="task-summary">{task.summary.clone()}</p>
            <progress
                max=move || progress().1
                value=move || progress().0
                aria-label="Progress"
            ></progress>
            <div class="task-meta">
                <span>{done}</span>
                <time datetime=created.clone()>{format!("Submitted {}", format::minute(&created))}</time>
                <Show when=move || scheduled && status() == TaskStatus::Queued>
                    <ScheduledFor run_at=run_at.clone() />
                </Show>
                {task.workflow_stopped_date.map(|finished| finished.to_rfc3339()).map(|finished| view! {
                    <time datetime=finished.clone()>{format!("Finished {}", format::minute(&finished))}</time>
                })}
                <Show when=move || is_export && status() == TaskStatus::Completed>
                    {if export_expired {
                        view! { <span class="expired">"Expired"</span> }.into_any()
                    } else {
                        view! { <a href=export_file_href(id) download="">"Download CSV"</a> }.into_any()
                    }}
                </Show>
            </div>
        </li>
    }
}
