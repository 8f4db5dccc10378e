//! Queue health, for admins: how much work is where, how long the backlog has waited, which
//! nodes are alive, which actions are paused, and the failed tasks, with bulk Retry/Abandon.
//! Staff get a 403 page. The page refreshes itself from the live task stream.

use bulkq_types::TaskStatus;
use bulkq_types::actions::component_label;
use bulkq_types::task::{TaskAct, TaskSelection};
use leptos::prelude::*;
use leptos_meta::Title;
use uuid::Uuid;

use crate::api::admin::{
    ProblemTask, QueueHealth, RunPeriodicJob, SetActionPaused, SetPeriodicPaused, get_queue_health,
    problems_query,
};
use crate::components::feedback::{ErrorMessage, HeaderRow};
use crate::components::task_acts::{ActBar, ActResult, Acting, Ticks};
use crate::components::throughput_chart::ThroughputChart;
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;
use crate::live::{REFETCH_AT_MOST_EVERY, coalesced, use_task_stream};

/// Renders queue health.
#[component]
pub fn QueueHealthPage() -> impl IntoView {
    let action_filter = RwSignal::new(String::new());
    let reload = RwSignal::new(0u64);
    let acting = Acting::default();
    let ticks = Ticks::kept_by_page(move || action_filter.track(), acting);
    let run_job = ServerAction::<RunPeriodicJob>::new();
    let pause_job = ServerAction::<SetPeriodicPaused>::new();
    let pause = ServerAction::<SetActionPaused>::new();
    let health = Resource::new(
        move || {
            (
                action_filter.get(),
                reload.get(),
                acting.action.version().get(),
                run_job.version().get(),
                pause_job.version().get(),
                pause.version().get(),
            )
        },
        |(action, ..)| get_queue_health(action),
    );
    // One refetch for however many events arrive within a second of the first.
    let refetch = coalesced(REFETCH_AT_MOST_EVERY, move || reload.update(|n| *n += 1));
    use_task_stream(move |_| refetch());
    let actions = Actions {
        acting,
        run_job,
        pause_job,
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
                        Ok(health) => view! { <Health health action_filter actions ticks /> }.into_any(),
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
            <ActResult acting />
        </main>
    }
}

/// The page's server actions, passed down together.
#[derive(Clone, Copy)]
struct Actions {
    /// The failed list's acts and a stalled task's "Requeue now".
    acting: Acting,
    run_job: ServerAction<RunPeriodicJob>,
    pause_job: ServerAction<SetPeriodicPaused>,
    pause: ServerAction<SetActionPaused>,
}

#[component]
fn Health(
    health: QueueHealth,
    action_filter: RwSignal<String>,
    actions: Actions,
    ticks: Ticks,
) -> impl IntoView {
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
        <div class="table-scroll" tabindex="0">
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
                                <td>{component_label(&row.action).to_owned()}</td>
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
        <div class="table-scroll" tabindex="0">
            <table class="periodic-jobs">
                <HeaderRow columns=&["Job", "Schedule", "Lock at most / least", "Next run", "Last run", "Result", "Node", "Skipped", ""] />
                <tbody>
                    {health.periodic_jobs.into_iter().map(|job| {
                        let name = job.name.clone();
                        let toggle_name = job.name.clone();
                        let paused = job.paused;
                        let skipped = match job.skipped_runs {
                            0 => "none".to_owned(),
                            n => format!("{}, last {}", format::count(n as u64), format::second(&job.last_skipped)),
                        };
                        view! {
                            <tr data-job=job.name.clone()>
                                <td><code>{job.name.clone()}</code></td>
                                <td>{job.schedule}</td>
                                <td>{format!("{} / {}", format::duration(job.lock_at_most_seconds), format::duration(job.lock_at_least_seconds))}</td>
                                <td>{if paused { "paused".to_owned() } else { format::second(&job.next_run) }}</td>
                                <td>{format::second(&job.last_run)}</td>
                                <td>{if job.last_result.is_empty() { "—".to_owned() } else { job.last_result }}</td>
                                <td><code>{job.last_node}</code></td>
                                <td data-testid="skipped-runs">{skipped}</td>
                                <td class="row-buttons">
                                    <button
                                        type="button"
                                        disabled=paused
                                        on:click=move |_| { actions.run_job.dispatch(RunPeriodicJob { name: name.clone() }); }
                                    >
                                        "Run now"
                                    </button>
                                    <button
                                        type="button"
                                        class="secondary"
                                        on:click=move |_| {
                                            actions.pause_job.dispatch(SetPeriodicPaused { name: toggle_name.clone(), paused: !paused });
                                        }
                                    >
                                        {if paused { "Resume" } else { "Pause" }}
                                    </button>
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>

        {move || actions.run_job.value().get().and_then(Result::err).map(|error| view! {
            <p class="error" role="alert">{error.to_string()}</p>
        })}

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
                "Running tasks whose node stopped sending heartbeats (they go back to the queue by themselves) or that have not moved for {} minutes. Requeue now takes one back from its node at once.",
                crate::api::admin::STALLED_AFTER_MINUTES
            )}
        </p>
        {if health.stalled.is_empty() {
            view! { <p class="empty" data-testid="no-stalled">"No stalled tasks."</p> }.into_any()
        } else {
            view! {
                <div class="table-scroll" tabindex="0">
                    <table data-testid="stalled">
                        <HeaderRow columns=&["Request", "Status", "Node", "Last change", ""] />
                        <tbody>
                            {health.stalled.into_iter().map(|stalled| {
                                let id = stalled.task.id;
                                view! {
                                    <tr>
                                        <td><a href=format!("/tasks/{id}")>{stalled.task.summary.clone()}</a></td>
                                        <td>{stalled.task.workflow_status.as_str()}</td>
                                        <td><code>{stalled.node}</code></td>
                                        <td>{format::second(&stalled.last_change)}</td>
                                        <td>
                                            <button
                                                type="button"
                                                on:click=move |_| {
                                                    actions.acting.dispatch(
                                                        TaskAct::Requeue,
                                                        TaskSelection::Ids(vec![id]),
                                                        String::new(),
                                                    );
                                                }
                                            >
                                                "Requeue now"
                                            </button>
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}

        <Problems health_problems=health.problems problem_total=health.problem_total action_names action_filter actions ticks />
    }
}

#[component]
fn Problems(
    health_problems: Vec<crate::api::admin::ProblemTask>,
    problem_total: u64,
    action_names: Vec<String>,
    action_filter: RwSignal<String>,
    actions: Actions,
    ticks: Ticks,
) -> impl IntoView {
    let shown: Vec<Uuid> = health_problems.iter().map(|p| p.task.id).collect();
    let matching =
        TaskSelection::Matching(Box::new(problems_query(&action_filter.get_untracked())));
    let chosen = ticks.chosen(matching, format::count(problem_total), shown.clone());
    view! {
        <h2>"Failed tasks"</h2>
        <div class="search-bar">
            <label for="problem-action">"Action"</label>
            <select
                id="problem-action"
                on:change=move |ev| action_filter.set(event_target_value(&ev))
            >
                <option value="" selected=move || action_filter.get().is_empty()>"All actions"</option>
                {action_names.into_iter().map(|name| {
                    let value = name.clone();
                    view! {
                        <option value=name.clone() selected=move || action_filter.get() == value>
                            {component_label(&name).to_owned()}
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
                            prop:checked=move || ticks.all_matching.get()
                            on:change=move |ev| ticks.all_matching.set(event_target_checked(&ev))
                        />
                        {format!(" Select all {} matching", format::count(problem_total))}
                    </label>
                </p>
                <div class="table-scroll" tabindex="0">
                    <table data-testid="problems">
                        <thead>
                            <tr>
                                <th scope="col">
                                    <input
                                        type="checkbox"
                                        aria-label="Select every task shown"
                                        prop:checked={
                                            let shown = shown.clone();
                                            move || ticks.is_page_ticked(&shown)
                                        }
                                        on:change=move |ev| ticks.tick_page(&shown, event_target_checked(&ev))
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
                                                prop:checked=move || ticks.is_ticked(id)
                                                on:change=move |ev| ticks.tick(id, event_target_checked(&ev))
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
                <ActBar acting=actions.acting acts=vec![TaskAct::Retry, TaskAct::Abandon] chosen />
            }.into_any()
        }}
    }
}
