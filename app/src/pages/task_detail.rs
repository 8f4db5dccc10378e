//! Task detail: what was asked for, progress, what the action has done so far (and a
//! finished export's file), and the timeline of every transition and attempt. Its owner
//! (and admins) can run a waiting task now or move it to another time or priority. Admins
//! also see the error detail and can retry, requeue (a stalled running task) or abandon it.
//! The page follows the live task stream, so it changes as the task runs.

use bulkq_types::TaskStatus;
use bulkq_types::actions::{ActionKind, ActionReport, component_label};
use bulkq_types::export::ExportFileState;
use bulkq_types::task::TaskAct;
use bulkq_types::words::progress_words;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use uuid::Uuid;

use crate::api::tasks::{ActOnTask, RescheduleTask, TaskDetail, TaskUpdate, get_task_detail};
use crate::components::feedback::ErrorMessage;
use crate::components::pace::Pace;
use crate::components::reschedule::{Reschedule, priority_words};
use crate::components::scheduled_for::ScheduledFor;
use crate::components::top_bar::TopBar;
use crate::format;
use crate::live::{LiveMessage, use_task_stream};

/// The task id the route names, if it is one.
fn task_id_in(params: &leptos_router::params::ParamsMap) -> Option<Uuid> {
    params.get("id").and_then(|id| Uuid::parse_str(&id).ok())
}

/// Renders one task.
#[component]
pub fn TaskDetailPage() -> impl IntoView {
    let params = use_params_map();
    let task_id = move || params.with(task_id_in);
    let act = ServerAction::<ActOnTask>::new();
    let reschedule = ServerAction::<RescheduleTask>::new();
    let reload = RwSignal::new(0u64);
    let detail = Resource::new(
        move || {
            let versions = (act.version().get(), reschedule.version().get());
            (task_id(), reload.get(), versions)
        },
        |(id, ..)| async move {
            match id {
                Some(id) => get_task_detail(id).await,
                None => Err(crate::error::AppError::NotFound("Task".into())),
            }
        },
    );
    use_task_stream(move |message| {
        let concerns_this = match &message {
            // Outside any view: read without tracking (a tracked read here warned at every update).
            LiveMessage::Task(update) => Some(update.task_id) == params.with_untracked(task_id_in),
            LiveMessage::Resync => true,
        };
        if concerns_this {
            reload.update(|n| *n += 1);
        }
    });

    view! {
        <Title text="Task · bulkq" />
        <TopBar />
        <main>
            <p><a href="/tasks">"← My tasks"</a></p>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match detail.await {
                        Ok(detail) => view! { <Detail detail act reschedule /> }.into_any(),
                        Err(error) => {
                            view! {
                                <h1>"Task"</h1>
                                <ErrorMessage error />
                            }
                                .into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

#[component]
fn Detail(
    detail: TaskDetail,
    act: ServerAction<ActOnTask>,
    reschedule: ServerAction<RescheduleTask>,
) -> impl IntoView {
    let id = detail.task.id;
    let waiting = detail.task.workflow_status == TaskStatus::Queued;
    let priority = detail.task.priority;
    let acts = detail.acts();
    let offers = move |offered: TaskAct| acts.contains(&offered);
    let progress = match progress_words(
        detail.task.workflow_status,
        detail.task.progress_done,
        detail.task.progress_total,
    ) {
        words if words.is_empty() => "Not started".to_owned(),
        words => words,
    };
    // The page refetches on every change of the task, so what it was rendered with is current.
    let now = TaskUpdate {
        task_id: id,
        status: detail.task.workflow_status,
        progress_done: detail.task.progress_done,
        progress_total: detail.task.progress_total,
    };
    let act_error = move || {
        act.value()
            .get()
            .and_then(Result::err)
            .map(|error| error.to_string())
    };
    // One form per act: the task, the act, and (for an abandon) the reason.
    let act_form = move |offered: TaskAct, button: AnyView| {
        view! {
            <ActionForm action=act>
                <input type="hidden" name="id" value=id.to_string() />
                <input type="hidden" name="act" value=offered.as_str() />
                {button}
            </ActionForm>
        }
    };
    view! {
        <h1>{component_label(&detail.task.action).to_owned()} " task"</h1>
        <p class="task-summary" data-testid="task-summary">{detail.task.summary.clone()}</p>
        <dl class="facts">
            <dt>"Status"</dt>
            <dd>
                <span class=format!("badge badge-{}", detail.task.workflow_status.as_str().to_lowercase()) data-testid="task-status">
                    {detail.task.workflow_status.as_str()}
                </span>
            </dd>
            <dt>"Progress"</dt>
            <dd data-testid="task-progress">{progress} " " <Pace update=Signal::stored(now) started=detail.task.execution_started_date /></dd>
            <dt>"Attempt"</dt>
            <dd>{format!("{} of {}", detail.task.attempt, detail.task.max_attempts)}</dd>
            <dt>"Submitted"</dt>
            <dd>{format::second(&detail.task.created_date.to_rfc3339())}</dd>
            {(waiting && detail.task.is_scheduled()).then(|| view! {
                <dt>"Starts"</dt>
                <dd><ScheduledFor run_at=detail.task.run_at.to_rfc3339() /></dd>
            })}
            <dt>"Priority"</dt>
            <dd data-testid="task-priority">{priority_words(priority)}</dd>
            <dt>"Id"</dt>
            <dd><code>{id.to_string()}</code></dd>
        </dl>
        <details class="stored-request">
            <summary>"Stored request"</summary>
            <dl class="facts">
                {detail
                    .spec_summary
                    .into_iter()
                    .map(|(field, value)| view! { <dt>{field}</dt> <dd>{value}</dd> })
                    .collect_view()}
            </dl>
        </details>
        {detail.task.export_file.and_then(|file| match (file, detail.task.links.file.clone()) {
            (ExportFileState::Ready { until }, Some(href)) => Some(view! {
                <p>
                    <a class="download" href=href download="">"Download the CSV"</a>
                    " "<small>{format!("(available until {})", format::minute(&until.to_rfc3339()))}</small>
                </p>
            }.into_any()),
            (ExportFileState::Expired { at }, _) => Some(view! {
                <p class="expired" data-testid="export-expired">
                    {format!("This export expired on {}; its file was deleted. Run the export again for a fresh copy.", format::minute(&at.to_rfc3339()))}
                </p>
            }.into_any()),
            (ExportFileState::Ready { .. } | ExportFileState::NotFinished | ExportFileState::NotYours, _) => None,
        })}
        {detail.people_import.map(|import| view! { <ImportOutcome import /> })}
        {detail.task.kind().zip(detail.task.report).map(|(kind, report)| {
            let finished = detail.task.workflow_status.is_terminal();
            let outcomes = detail.task.links.outcomes.clone();
            view! { <Report kind report finished outcomes /> }
        })}
        {offers(TaskAct::Cancel).then(|| act_form(TaskAct::Cancel, view! {
            <button type="submit" class="danger" data-testid="cancel-task">"Cancel task"</button>
        }.into_any()))}
        <Show when=move || act_error().is_some()>
            <p class="error" role="alert">{act_error}</p>
        </Show>
        {(waiting && offers(TaskAct::Cancel)).then(|| view! {
            <Reschedule id priority action=reschedule />
        })}
        {detail.error_detail.map(|error| view! {
            <h2>"Error detail"</h2>
            <pre class="error-detail" data-testid="error-detail">{error}</pre>
        })}
        {detail.can_repair.then(|| view! {
            <section class="repair" aria-label="Repair">
                <h2>"Repair"</h2>
                {act_form(TaskAct::Retry, view! {
                    <button type="submit" disabled=!offers(TaskAct::Retry)>"Retry"</button>
                }.into_any())}
                {offers(TaskAct::Requeue).then(|| act_form(TaskAct::Requeue, view! {
                    <button type="submit" data-testid="requeue-task">"Requeue now"</button>
                }.into_any()))}
                {act_form(TaskAct::Abandon, view! {
                    <label for="abandon-reason">"Reason"</label>
                    <input id="abandon-reason" name="reason" type="text" required maxlength="500" />
                    <button type="submit" class="danger" disabled=!offers(TaskAct::Abandon)>"Abandon"</button>
                }.into_any())}
            </section>
        })}
        <h2>"Timeline"</h2>
        <ol class="timeline" data-testid="timeline">
            {detail
                .history
                .into_iter()
                .map(|entry| view! {
                    <li>
                        <time datetime=entry.at.clone()>{format::second(&entry.at)}</time>
                        " "
                        <strong>{entry.status.as_str()}</strong>
                        {format!(" (attempt {}) by {}", entry.attempt, entry.actor)}
                        {entry.message.map(|message| view! { <div class="timeline-message">{message}</div> })}
                    </li>
                })
                .collect_view()}
        </ol>
    }
}

/// What the action has done (so far, unless `finished`): the counts that apply to it, a
/// link to each person's outcome, and a few of the people it could not act on.
#[component]
fn Report(
    kind: ActionKind,
    report: ActionReport,
    finished: bool,
    outcomes: Option<String>,
) -> impl IntoView {
    let skipped: Vec<_> = report
        .forbidden_sample
        .iter()
        .chain(&report.unknown_sample)
        .map(|id| view! { <li><code>{id.to_string()}</code></li> })
        .collect();
    view! {
        <h2>{if finished { "Result" } else { "Result so far" }}</h2>
        <dl class="facts report" data-testid="report">
            {report_lines(kind, &report)
                .into_iter()
                .map(|(label, count)| view! {
                    <dt>{label}</dt>
                    <dd>{format::count(count)}</dd>
                })
                .collect_view()}
        </dl>
        {outcomes.map(|href| view! {
            <p>
                <a class="download" href=href download="" data-testid="outcomes-download">
                    "Download each person's outcome (CSV)"
                </a>
            </p>
        })}
        {(!skipped.is_empty()).then(|| view! {
            <details>
                <summary>"Some of the people not acted on"</summary>
                <ul>{skipped}</ul>
            </details>
        })}
    }
}

/// The report's counts as the action's owner reads them. What an action did is always
/// shown, and what it left as it was except for an export (which leaves nothing); email's
/// own counts are always shown, as they are what its owner looks for; the rest only when
/// they happened.
fn report_lines(kind: ActionKind, report: &ActionReport) -> Vec<(&'static str, u64)> {
    let words = kind.report_words();
    let is_email = words.sends_email;
    [
        (words.changed, report.changed, true),
        (
            words.unchanged.unwrap_or("Unchanged"),
            report.unchanged,
            words.unchanged.is_some(),
        ),
        ("Not yours to act on", report.forbidden, false),
        ("No such person", report.unknown, false),
        ("No email address", report.without_address, is_email),
        ("Waiting to be tried again", report.deferred, is_email),
        ("Could not be sent", report.failed, is_email),
        ("Coaches told", report.coaches_told, words.tells_coaches),
        (
            "Coaches not told (no address, or the message failed)",
            report.coaches_not_told,
            false,
        ),
    ]
    .into_iter()
    .filter(|(_, count, always)| *always || *count > 0)
    .map(|(label, count, _)| (label, count))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_shows_what_applies_to_its_action() {
        let report = ActionReport {
            changed: 3,
            forbidden: 1,
            ..ActionReport::default()
        };
        assert_eq!(
            report_lines(ActionKind::ProgramStatusChange, &report),
            [
                ("Status changed", 3),
                ("Already in that status", 0),
                ("Not yours to act on", 1)
            ]
        );
        assert_eq!(
            report_lines(ActionKind::Export, &report),
            [("Rows exported", 3), ("Not yours to act on", 1)]
        );
        assert_eq!(
            report_lines(ActionKind::Email, &ActionReport::default()),
            [
                ("Sent", 0),
                ("Already handled by an earlier attempt", 0),
                ("No email address", 0),
                ("Waiting to be tried again", 0),
                ("Could not be sent", 0)
            ]
        );
    }
}

/// A people import's counts so far, and its error report once a row was refused.
#[component]
fn ImportOutcome(import: bulkq_types::people_import::ImportReport) -> impl IntoView {
    let counts = import.counts;
    view! {
        <section aria-label="Import" data-testid="import-outcome">
            <p>
                {format!(
                    "{} rows read: {} created, {} changed, {} unchanged, {} retired; {} not imported.",
                    import.rows, counts.created, counts.changed, counts.unchanged, counts.retired, import.problems,
                )}
            </p>
            {(import.problems > 0).then(|| view! {
                <p>
                    <a class="download" href=import.problems_href download="">
                        "Download the rows not imported (CSV)"
                    </a>
                </p>
            })}
        </section>
    }
}
