//! Queue health, for admins: how much work is where, how long the backlog has waited, which
//! nodes are alive, which actions are paused, and the failed tasks, with bulk Retry/Abandon.
//! Staff get a 403 page. The page refreshes itself from the live task stream.

use std::collections::HashSet;

use bulkq_types::TaskStatus;
use bulkq_types::actions::action_label;
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use crate::api::admin::{
    AbandonTasks, ProblemTask, QueueHealth, RetryTasks, SetActionPaused, get_queue_health,
};
use crate::components::feedback::{ErrorMessage, HeaderRow};
use crate::components::throughput_chart::ThroughputChart;
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;
use crate::live::use_task_stream;

/// How often at most the page refetches its report while task events stream in: a drain
/// of thousands of tasks sends thousands of events, and each refetch is a server call that
/// counts every table.
const REFETCH_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Renders queue health.
#[component]
pub fn QueueHealthPage() -> impl IntoView {
    let action_filter = RwSignal::new(String::new());
    let reload = RwSignal::new(0u64);
    let retry = ServerAction::<RetryTasks>::new();
    let abandon = ServerAction::<AbandonTasks>::new();
    let pause = ServerAction::<SetActionPaused>::new();
    let health = Resource::new(
        move || {
            (
                action_filter.get(),
                reload.get(),
                retry.version().get(),
                abandon.version().get(),
                pause.version().get(),
            )
        },
        |(action, ..)| get_queue_health(action),
    );
    // One refetch for however many events arrive within a second of the first.
    let refetch_pending = StoredValue::new(false);
    use_task_stream(move |_| {
        if refetch_pending.get_value() {
            return;
        }
        refetch_pending.set_value(true);
        set_timeout(
            move || {
                refetch_pending.set_value(false);
                reload.update(|n| *n += 1);
            },
            REFETCH_AT_MOST_EVERY,
        );
    });
    let actions = Actions {
        retry,
        abandon,
        pause,
    };

    view! {
        <Title text="Queue health · bulkq" />
        <TopBar />
        <main>
            <h1>"Queue health"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match health.await {
                        Ok(health) => view! { <Health health action_filter actions /> }.into_any(),
                        Err(AppError::Forbidden(_)) => view! {
                            <p class="error" role="alert" data-testid="forbidden">
                                "Queue health is for administrators only."
                            </p>
                        }
                        .into_any(),
                        Err(error) => {
                            view! { <ErrorMessage error /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

/// The page's server actions, passed down together.
#[derive(Clone, Copy)]
struct Actions {
    retry: ServerAction<RetryTasks>,
    abandon: ServerAction<AbandonTasks>,
    pause: ServerAction<SetActionPaused>,
}

#[component]
fn Health(health: QueueHealth, action_filter: RwSignal<String>, actions: Actions) -> impl IntoView {
    let oldest = match health.oldest_wait_seconds {
        Some(seconds) => format!("{} waiting", format::duration(seconds)),
        None => "nothing waiting".to_owned(),
    };
    let action_names: Vec<String> = health.by_action.iter().map(|a| a.action.clone()).collect();
    let no_tasks = health.by_action.is_empty();
    view! {
        <section aria-label="Totals" class="cards">
            {TaskStatus::ALL
                .iter()
                .zip(health.totals.iter())
                .map(|(status, count)| view! {
                    <div class="card" data-testid=format!("total-{}", status.as_str().to_lowercase())>
                        <span class=format!("badge badge-{}", status.as_str().to_lowercase())>{status.as_str()}</span>
                        <strong>{format::count(*count as u64)}</strong>
                    </div>
                })
                .collect_view()}
            <div class="card"><span>"Oldest due task"</span><strong>{oldest}</strong></div>
            <div class="card" data-testid="export-disk-use">
                <span>"Exports on disk"</span>
                <strong>{format::bytes(health.export_bytes)}</strong>
                <small>{format::plural(health.export_files, "file", "files")}</small>
            </div>
        </section>

        <h2>"Throughput, last hour"</h2>
        <ThroughputChart per_minute=health.throughput />

        <h2>"By action"</h2>
        <div class="table-scroll">
            <table>
                <thead>
                    <tr>
                        <th scope="col">"Action"</th>
                        {TaskStatus::ALL.iter().map(|s| view! { <th scope="col">{s.as_str()}</th> }).collect_view()}
                        <th scope="col">"Claiming"</th>
                    </tr>
                </thead>
                <tbody>
                    {health.by_action.into_iter().map(|row| {
                        let action = row.action.clone();
                        let paused = row.paused;
                        view! {
                            <tr>
                                <td>{action_label(&row.action).to_owned()}</td>
                                {row.counts.iter().map(|c| view! { <td>{format::count(*c as u64)}</td> }).collect_view()}
                                <td>
                                    <button
                                        type="button"
                                        class="secondary"
                                        on:click=move |_| {
                                            actions.pause.dispatch(SetActionPaused { action: action.clone(), paused: !paused });
                                        }
                                    >
                                        {if paused { "Paused: resume" } else { "Pause" }}
                                    </button>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {no_tasks.then(|| view! { <p class="empty">"No tasks yet."</p> })}

        <h2>"Nodes"</h2>
        {if health.nodes.is_empty() {
            view! { <p class="empty">"No node has sent a heartbeat."</p> }.into_any()
        } else {
            view! {
                <ul class="nodes">
                    {health.nodes.into_iter().map(|node| view! {
                        <li data-testid="node">
                            <span class=format!("badge badge-{}", node.state.as_str().to_lowercase())>
                                {node.state.as_str()}
                            </span>
                            " "
                            <code>{node.node_id}</code>
                            {format!(
                                " on {} (pid {}, version {}): {} of {} slots busy, started {}, {}",
                                node.host,
                                node.pid.map(|pid| pid.to_string()).unwrap_or_default(),
                                node.version,
                                node.tasks_running,
                                node.worker_slots,
                                format::minute(&node.started),
                                if node.stopped.is_empty() {
                                    format!("last heartbeat {} ago", format::duration(node.seconds_since_heartbeat))
                                } else {
                                    format!("stopped {}", format::minute(&node.stopped))
                                }
                            )}
                        </li>
                    }).collect_view()}
                </ul>
            }.into_any()
        }}

        <h2>"Periodic jobs"</h2>
        <div class="table-scroll">
            <table class="periodic-jobs">
                <HeaderRow columns=&["Job", "Schedule", "Next run", "Last run", "Result", "Node"] />
                <tbody>
                    {health.periodic_jobs.into_iter().map(|job| view! {
                        <tr>
                            <td><code>{job.name}</code></td>
                            <td>{job.schedule}</td>
                            <td>{format::second(&job.next_run)}</td>
                            <td>{format::second(&job.last_run)}</td>
                            <td>{if job.last_result.is_empty() { "—".to_owned() } else { job.last_result }}</td>
                            <td><code>{job.last_node}</code></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>

        <h2>"Scheduler locks"</h2>
        {if health.locks.is_empty() {
            view! { <p class="empty" data-testid="no-locks">"No scheduler lock is held right now."</p> }.into_any()
        } else {
            view! {
                <ul class="locks">
                    {health.locks.into_iter().map(|lock| view! {
                        <li>
                            <code>{lock.name}</code>
                            {format!(
                                " held by {} since {}, until {}",
                                lock.locked_by,
                                format::second(&lock.locked_at),
                                format::second(&lock.lock_until)
                            )}
                        </li>
                    }).collect_view()}
                </ul>
            }.into_any()
        }}

        <h2>"Stalled tasks"</h2>
        <p class="hint">
            {format!(
                "Running tasks whose node stopped sending heartbeats (they go back to the queue by themselves) or that have not moved for {} minutes.",
                crate::api::admin::STALLED_AFTER_MINUTES
            )}
        </p>
        {if health.stalled.is_empty() {
            view! { <p class="empty" data-testid="no-stalled">"No stalled tasks."</p> }.into_any()
        } else {
            view! {
                <div class="table-scroll">
                    <table data-testid="stalled">
                        <HeaderRow columns=&["Request", "Status", "Node", "Last change"] />
                        <tbody>
                            {health.stalled.into_iter().map(|stalled| {
                                let id = stalled.task.id;
                                view! {
                                    <tr>
                                        <td><a href=format!("/tasks/{id}")>{stalled.task.summary.clone()}</a></td>
                                        <td>{stalled.task.workflow_status.as_str()}</td>
                                        <td><code>{stalled.node}</code></td>
                                        <td>{format::second(&stalled.last_change)}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}

        <Problems health_problems=health.problems problem_total=health.problem_total action_names action_filter actions />
    }
}

#[component]
fn Problems(
    health_problems: Vec<crate::api::admin::ProblemTask>,
    problem_total: u64,
    action_names: Vec<String>,
    action_filter: RwSignal<String>,
    actions: Actions,
) -> impl IntoView {
    let selected: RwSignal<HashSet<Uuid>> = RwSignal::new(HashSet::new());
    let all_matching = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let shown: Vec<Uuid> = health_problems.iter().map(|p| p.task.id).collect();
    let selection_size = move || {
        if all_matching.get() {
            problem_total
        } else {
            selected.with(|s| s.len() as u64)
        }
    };
    let ids = move || selected.with(|s| s.iter().copied().collect::<Vec<_>>());
    let on_retry = move |_| {
        actions.retry.dispatch(RetryTasks {
            ids: ids(),
            all_matching: all_matching.get_untracked(),
            action: action_filter.get_untracked(),
        });
    };
    let on_abandon = move |_| {
        actions.abandon.dispatch(AbandonTasks {
            ids: ids(),
            all_matching: all_matching.get_untracked(),
            action: action_filter.get_untracked(),
            reason: reason.get_untracked(),
        });
    };
    let result = move || {
        let message = |r: Result<crate::api::admin::RepairResult, AppError>, verb: &str| match r {
            Ok(done) => format!("{verb} {} tasks ({} skipped).", done.changed, done.skipped),
            Err(error) => error.to_string(),
        };
        actions
            .retry
            .value()
            .get()
            .map(|r| message(r, "Retried"))
            .or_else(|| {
                actions
                    .abandon
                    .value()
                    .get()
                    .map(|r| message(r, "Abandoned"))
            })
    };
    view! {
        <h2>"Failed tasks"</h2>
        <div class="search-bar">
            <label for="problem-action">"Action"</label>
            <select
                id="problem-action"
                on:change=move |ev| {
                    selected.set(HashSet::new());
                    action_filter.set(event_target_value(&ev));
                }
            >
                <option value="" selected=move || action_filter.get().is_empty()>"All actions"</option>
                {action_names.into_iter().map(|name| {
                    let value = name.clone();
                    view! {
                        <option value=name.clone() selected=move || action_filter.get() == value>
                            {action_label(&name).to_owned()}
                        </option>
                    }
                }).collect_view()}
            </select>
        </div>
        {if health_problems.is_empty() {
            view! { <p class="empty" data-testid="no-problems">"No failed tasks."</p> }.into_any()
        } else {
            view! {
                <p>
                    <label>
                        <input
                            type="checkbox"
                            prop:checked=move || all_matching.get()
                            on:change=move |ev| all_matching.set(event_target_checked(&ev))
                        />
                        {format!(" Select all {} matching", format::count(problem_total))}
                    </label>
                </p>
                <div class="table-scroll">
                    <table data-testid="problems">
                        <thead>
                            <tr>
                                <th scope="col">
                                    <input
                                        type="checkbox"
                                        aria-label="Select every task shown"
                                        on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            selected.set(if on { shown.iter().copied().collect() } else { HashSet::new() });
                                        }
                                    />
                                </th>
                                <th scope="col">"Request"</th>
                                <th scope="col">"Status"</th>
                                <th scope="col">"Error"</th>
                                <th scope="col">"Owner"</th>
                                <th scope="col">"Submitted"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {health_problems.into_iter().map(|ProblemTask { task, error }| {
                                let id = task.id;
                                let badge = format!("badge badge-{}", task.workflow_status.as_str().to_lowercase());
                                view! {
                                    <tr>
                                        <td>
                                            <input
                                                type="checkbox"
                                                aria-label="Select task"
                                                prop:checked=move || all_matching.get() || selected.with(|s| s.contains(&id))
                                                on:change=move |ev| {
                                                    let on = event_target_checked(&ev);
                                                    selected.update(|s| { if on { s.insert(id); } else { s.remove(&id); } });
                                                }
                                            />
                                        </td>
                                        <td><a href=format!("/tasks/{id}")>{task.summary}</a></td>
                                        <td><span class=badge>{task.workflow_status.as_str()}</span></td>
                                        <td class="error-line">{error}</td>
                                        <td>{task.created_by}</td>
                                        <td>{format::minute(&task.created_date.to_rfc3339())}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
                <div class="repair">
                    <button type="button" on:click=on_retry disabled=move || selection_size() == 0>
                        {move || format!("Retry {}", format::plural(selection_size(), "task", "tasks"))}
                    </button>
                    <label for="bulk-reason">"Reason"</label>
                    <input id="bulk-reason" type="text" maxlength="500" bind:value=reason />
                    <button type="button" class="danger" on:click=on_abandon disabled=move || selection_size() == 0>
                        {move || format!("Abandon {}", format::plural(selection_size(), "task", "tasks"))}
                    </button>
                </div>
            }.into_any()
        }}
        <Show when=move || result().is_some()>
            <p role="status" data-testid="repair-result">{result}</p>
        </Show>
    }
}
