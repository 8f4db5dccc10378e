//! The task explorer: "My tasks" (`/tasks`) and "All tasks" (`/admin/tasks`; staff see their
//! own there). Filters by status, action, owner, creation day, id, words and person live in the URL, so a
//! view can be shared; pages follow one another by a mark, not an offset. Rows can be
//! ticked, or every matching task chosen, and cancelled, retried, requeued or abandoned.
//! Statuses and progress follow the live task stream; other changes refetch the page at
//! most once a second.

use std::collections::HashMap;

use bulkq_types::TaskStatus;
use bulkq_types::actions::{ActionKind, component_label};
use bulkq_types::task::{TaskAct, TaskSelection, TaskView};
use bulkq_types::task_query::{TaskPage, TaskQuery};
use bulkq_types::words::progress_words;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_location;
use uuid::Uuid;

use crate::api::auth::get_current_user;
use crate::api::tasks::{TaskUpdate, list_tasks};
use crate::components::feedback::ErrorMessage;
use crate::components::pace::Pace;
use crate::components::scheduled_for::ScheduledFor;
use crate::components::task_acts::{ActBar, ActResult, Acting, Ticks};
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;
use crate::live::{LiveMessage, REFETCH_AT_MOST_EVERY, coalesced, use_task_stream};

/// Whose tasks a page lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The signed-in user's own.
    Mine,
    /// Everyone's for admins; staff still see only their own.
    Everyone,
}

/// The status filter's choices, in order: groups of statuses with their label, and single
/// statuses (labelled by their name).
const STATUS_CHOICES: [(Option<&str>, &[TaskStatus]); 8] = [
    (Some("Unfinished"), &TaskStatus::ACTIVE),
    (None, &[TaskStatus::Queued]),
    (Some("Running"), &TaskStatus::RUNNING),
    (None, &[TaskStatus::Completed]),
    (Some("Ended badly"), &TaskStatus::PROBLEMS),
    (None, &[TaskStatus::Failure]),
    (None, &[TaskStatus::Error]),
    (None, &[TaskStatus::Abandoned]),
];

/// A status choice's label and its value in the URL (`FAILURE,ERROR,ABANDONED`).
fn status_choice(
    (label, statuses): (Option<&'static str>, &[TaskStatus]),
) -> (&'static str, String) {
    let value: Vec<&str> = statuses.iter().map(|status| status.as_str()).collect();
    (
        label.unwrap_or_else(|| statuses[0].label()),
        value.join(","),
    )
}

/// `/tasks`: the signed-in user's tasks.
#[component]
pub fn MyTasksPage() -> impl IntoView {
    view! { <TaskExplorer scope=Scope::Mine /> }
}

/// `/admin/tasks`: every task, for admins.
#[component]
pub fn AllTasksPage() -> impl IntoView {
    view! { <TaskExplorer scope=Scope::Everyone /> }
}

#[component]
fn TaskExplorer(scope: Scope) -> impl IntoView {
    let location = use_location();
    let query = Memo::new(move |_| {
        let mut query = TaskQuery::from_query_string(&location.search.get());
        if let (Ok(query), Scope::Mine) = (&mut query, scope) {
            query.mine = Some(String::new());
        }
        query
    });
    let reload = RwSignal::new(0u64);
    let acting = Acting::default();
    let ticks = Ticks::kept_by_page(move || query.track(), acting);
    let tasks = Resource::new(
        move || (query.get(), reload.get(), acting.action.version().get()),
        |(query, ..)| async move {
            match query {
                Ok(query) => list_tasks(query).await,
                Err(problem) => Err(AppError::BadRequest(format!("This address: {problem}."))),
            }
        },
    );
    let user = Resource::new(|| (), |_| get_current_user());
    let live: RwSignal<HashMap<Uuid, TaskUpdate>> = RwSignal::new(HashMap::new());
    let refetch = coalesced(REFETCH_AT_MOST_EVERY, move || reload.update(|n| *n += 1));
    // Progress of a task on the page moves in place; anything else (a task the page has
    // not seen, one finishing, a reconnect) refetches the page.
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
                refetch();
            }
        }
        LiveMessage::Resync => refetch(),
    });
    let title = match scope {
        Scope::Mine => "My tasks",
        Scope::Everyone => "All tasks",
    };

    view! {
        <Title text=format!("{title} · bulkq") />
        <TopBar />
        <main>
            <h1>{title}</h1>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let is_admin = user.await.ok().flatten().is_some_and(|u| u.is_admin);
                    let query = query.get().unwrap_or_default();
                    view! { <Filters query scope is_admin /> }
                })}
            </Transition>
            <ActResult acting />
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let is_admin = user.await.ok().flatten().is_some_and(|u| u.is_admin);
                    match tasks.await {
                        Ok(page) if page.tasks.is_empty() => {
                            let filtered = query.get().is_ok_and(|q| q.filters() || q.before.is_some());
                            view! { <Empty filtered scope /> }.into_any()
                        }
                        Ok(page) => {
                            live.set(HashMap::new());
                            let query = query.get().unwrap_or_default();
                            view! { <Results page query live acting ticks is_admin /> }.into_any()
                        }
                        Err(error) => view! { <ErrorMessage error /> }.into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

/// The filter form: a GET form, so applying it changes the URL (and works without script).
#[component]
fn Filters(query: TaskQuery, scope: Scope, is_admin: bool) -> impl IntoView {
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let status = text(&query.status);
    let action = text(&query.action);
    let clear = match scope {
        Scope::Mine => "/tasks",
        Scope::Everyone => "/admin/tasks",
    };
    view! {
        <Form method="GET" action="">
            <div class="search-bar filters" role="search" aria-label="Filter tasks">
                <label for="filter-status">"Status"</label>
                <select id="filter-status" name="status">
                    <option value="">"Any status"</option>
                    {STATUS_CHOICES.map(status_choice).map(|(label, value)| view! {
                        <option value=value.clone() selected=status == value>{label}</option>
                    }).collect_view()}
                </select>
                <label for="filter-action">"Action"</label>
                <select id="filter-action" name="action">
                    <option value="">"Any action"</option>
                    {ActionKind::ALL.map(|kind| view! {
                        <option value=kind.component() selected=action == kind.component()>{kind.label()}</option>
                    }).collect_view()}
                </select>
                {(scope == Scope::Everyone && is_admin).then(|| view! {
                    <label for="filter-owner">"Owner"</label>
                    <input id="filter-owner" name="owner" type="text" maxlength="160" value=text(&query.owner) />
                })}
                <label for="filter-from">"Created from (UTC)"</label>
                <input id="filter-from" name="created_from" type="date" value=text(&query.created_from) />
                <label for="filter-to">"to"</label>
                <input id="filter-to" name="created_to" type="date" value=text(&query.created_to) />
                <label for="filter-id">"Task id"</label>
                <input id="filter-id" name="id" type="search" maxlength="36" value=text(&query.id) />
                <label for="filter-text">"Words"</label>
                <input
                    id="filter-text"
                    name="text"
                    type="search"
                    maxlength="200"
                    title={if is_admin { "In the request (subject, message, status, note) or the error" } else { "In the request: subject, message, status, note" }}
                    value=text(&query.text)
                />
                <label for="filter-person">"Person (school id)"</label>
                <input
                    id="filter-person"
                    name="person"
                    type="search"
                    maxlength="32"
                    title="Tasks that acted on this person, or left them out and said why"
                    value=text(&query.person)
                />
                <button type="submit">"Apply"</button>
                <a href=clear>"Clear"</a>
            </div>
        </Form>
    }
}

/// What an empty list says: how to make a task, or that the filters match nothing.
#[component]
fn Empty(filtered: bool, scope: Scope) -> impl IntoView {
    if filtered {
        return view! {
            <p class="empty" data-testid="tasks-empty">"No tasks match these filters."</p>
        }
        .into_any();
    }
    match scope {
        Scope::Mine => view! {
            <p class="empty" data-testid="tasks-empty">
                "You have no tasks yet. Select people on the "
                <a href="/">"caseload"</a>
                " and choose a bulk action."
            </p>
        }
        .into_any(),
        Scope::Everyone => {
            view! { <p class="empty" data-testid="tasks-empty">"There are no tasks."</p> }
                .into_any()
        }
    }
}

/// One page: how many match, the rows with their tick boxes, the acts, and the way on.
#[component]
fn Results(
    page: TaskPage,
    query: TaskQuery,
    live: RwSignal<HashMap<Uuid, TaskUpdate>>,
    acting: Acting,
    ticks: Ticks,
    is_admin: bool,
) -> impl IntoView {
    let shown: Vec<Uuid> = page.tasks.iter().map(|t| t.id).collect();
    let acts: Vec<TaskAct> = TaskAct::ALL
        .into_iter()
        .filter(|act| is_admin || !act.admins_only())
        .collect();
    let chosen = ticks.chosen(
        TaskSelection::Matching(Box::new(query.first_page())),
        page.total_words(),
        shown.clone(),
    );
    // The scope is the page's path, so links carry only the filters and the page.
    let link = |before: Option<String>| {
        let query = TaskQuery {
            before,
            mine: None,
            ..query.clone()
        };
        format!("?{}", query.to_query_string())
    };
    let newer = query.before.is_some().then(|| link(None));
    let older = page.next.clone().map(|next| link(Some(next)));
    view! {
        <p data-testid="tasks-total">
            {format!("{} match.", capitalised(&page.total_words()))}
            " "
            <label class="check">
                <input
                    type="checkbox"
                    data-testid="select-all-matching"
                    prop:checked=move || ticks.all_matching.get()
                    on:change=move |ev| ticks.all_matching.set(event_target_checked(&ev))
                />
                {format!(" Choose all {} matching", page.total_words())}
            </label>
        </p>
        <ActBar acting acts chosen />
        <p class="select-page">
            <label class="check">
                <input
                    type="checkbox"
                    aria-label="Tick every task on this page"
                    prop:checked={
                        let shown = shown.clone();
                        move || ticks.is_page_ticked(&shown)
                    }
                    on:change=move |ev| ticks.tick_page(&shown, event_target_checked(&ev))
                />
                " Tick this page"
            </label>
        </p>
        <ul class="task-list">
            {page
                .tasks
                .into_iter()
                .map(|task| view! { <TaskItem task live ticks /> })
                .collect_view()}
        </ul>
        <nav class="pager" aria-label="Pages">
            {newer.map(|href| view! { <a href=href rel="prev">"← Newest"</a> })}
            {older.map(|href| view! { <a href=href rel="next" data-testid="older">"Older →"</a> })}
        </nav>
    }
}

/// `more than 10 tasks` → `More than 10 tasks`.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// One task: tick box, action, target size, status badge, a progress bar with its pace, the
/// times, and the file of a finished export; status and progress follow the live stream.
#[component]
fn TaskItem(
    task: TaskView,
    live: RwSignal<HashMap<Uuid, TaskUpdate>>,
    ticks: Ticks,
) -> impl IntoView {
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
    let started = task.execution_started_date;
    let export_href = task.links.file.clone();
    let export_expired = task.export_expired();
    let scheduled = task.is_scheduled();
    let run_at = task.run_at.to_rfc3339();
    let created = task.created_date.to_rfc3339();
    view! {
        <li class="task" data-task-id=id.to_string()>
            <div class="task-head">
                <input
                    type="checkbox"
                    aria-label="Tick task"
                    prop:checked=move || ticks.is_ticked(id)
                    on:change=move |ev| ticks.tick(id, event_target_checked(&ev))
                />
                <a class="task-action" href=format!("/tasks/{id}")>{component_label(&task.action).to_owned()}</a>
                <span class="task-target" data-testid="task-target">{target}</span>
                <span class=move || format!("badge badge-{}", status().as_str().to_lowercase()) data-testid="task-status">
                    {move || status().as_str()}
                </span>
                <span class="task-owner">{task.created_by.clone()}</span>
            </div>
            <p class="task-summary" data-testid="task-summary">{task.summary.clone()}</p>
            <progress
                max=move || progress().1
                value=move || progress().0
                aria-label="Progress"
            ></progress>
            <div class="task-meta">
                <span>{done}</span>
                <Pace update=current.into() started />
                <time datetime=created.clone()>{format!("Submitted {}", format::minute(&created))}</time>
                <Show when=move || scheduled && status() == TaskStatus::Queued>
                    <ScheduledFor run_at=run_at.clone() />
                </Show>
                {task.workflow_stopped_date.map(|finished| finished.to_rfc3339()).map(|finished| view! {
                    <time datetime=finished.clone()>{format!("Finished {}", format::minute(&finished))}</time>
                })}
                <Show when=move || status() == TaskStatus::Completed>
                    {export_href.clone().map(|href| view! { <a href=href download="">"Download CSV"</a> })}
                    {export_expired.then(|| view! { <span class="expired">"Expired"</span> })}
                </Show>
            </div>
        </li>
    }
}
