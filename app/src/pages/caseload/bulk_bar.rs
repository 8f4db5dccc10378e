//! The bulk-action bar over the caseload table, shown while anyone is selected: how many are
//! selected (and the switch to everyone matching the search), the five actions, and the way
//! each goes: form → confirmation with the number of people affected → the new task.
//!
//! ```text
//! Closed ─action─► Form ─Continue─► Counting ─► Confirm ─Confirm─► Submitting ─► Submitted
//!   (watch/unwatch skip the form)       │          │ Back              │
//!                                       └──error───┴────► Form ◄──error┘ (or Closed)
//! ```

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;

use bulkq_types::actions::ActionKind;
use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::{ActionRequest, ScheduleRequest};

use super::bulk_forms::{BulkForm, Drafts, has_form, question};
use super::selection::Selection;
use crate::api::bulk::{SubmittedTask, preview_bulk_target, submit_bulk_action};
use crate::api::caseload::ProgramStatusOption;
use crate::{format, local_time};

/// Where the bar's panel is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Closed,
    Form(ActionKind),
    /// Asking the server how many people the action would affect.
    Counting,
    /// Asking the user. The request's target is the one counted, so what is confirmed is
    /// what is sent.
    Confirm {
        request: Box<ActionRequest>,
        people: u64,
    },
    Submitting,
    Submitted {
        task: SubmittedTask,
        people: u64,
    },
}

impl Step {
    /// Waiting for the server: the buttons that would start something else are off.
    fn is_busy(&self) -> bool {
        matches!(self, Step::Counting | Step::Submitting)
    }
}

/// Where Back and failures lead: the action's form, with what was typed, to fix or change.
fn return_step(kind: ActionKind) -> Step {
    match has_form(kind) {
        true => Step::Form(kind),
        false => Step::Closed,
    }
}

/// The bar, for one results page. `total` is how many the search matches (`exact` false
/// when that is only a lower bound).
#[component]
pub fn BulkBar(
    selection: Selection,
    filter: PersonFilter,
    total: u64,
    exact: bool,
    page_len: usize,
    statuses: StoredValue<Vec<ProgramStatusOption>>,
) -> impl IntoView {
    let step = RwSignal::new(Step::Closed);
    let error = RwSignal::new(None::<String>);
    let drafts = Drafts::new();
    let filter = StoredValue::new(filter);

    let count = move |(request, schedule): (ActionRequest, ScheduleRequest)| {
        // Only reachable with someone selected: the bar and its panel close otherwise.
        let Some(target) = selection.target(&filter.get_value()) else {
            return;
        };
        let kind = request.kind();
        let request = request.with(target.clone(), schedule);
        error.set(None);
        step.set(Step::Counting);
        spawn_local(async move {
            match preview_bulk_target(target).await {
                Ok(people) => step.set(Step::Confirm {
                    request: Box::new(request),
                    people,
                }),
                Err(e) => {
                    error.set(Some(e.to_string()));
                    step.set(return_step(kind));
                }
            }
        });
    };
    // The key naming the submission in flight, with what it sent: a retry of the same
    // request (after an error, say) sends the same key, so the server makes at most one
    // task of it; anything else is a new submission with a new key.
    let sent = StoredValue::new(None::<(String, ActionRequest)>);
    let submit = move |request: ActionRequest, people: u64| {
        error.set(None);
        step.set(Step::Submitting);
        let key = match sent.get_value() {
            Some((key, earlier)) if earlier == request => key,
            _ => uuid::Uuid::new_v4().to_string(),
        };
        sent.set_value(Some((key.clone(), request.clone())));
        let kind = request.kind();
        spawn_local(async move {
            match submit_bulk_action(request, Some(key)).await {
                Ok(task) => {
                    sent.set_value(None);
                    step.set(Step::Submitted { task, people });
                }
                Err(e) => {
                    error.set(Some(e.to_string()));
                    step.set(return_step(kind));
                }
            }
        });
    };
    // An action with a form opens it; one without goes straight to its count.
    let choose = move |kind: ActionKind| {
        if has_form(kind) {
            error.set(None);
            step.set(Step::Form(kind));
        } else {
            count((drafts.request(kind), ScheduleRequest::default()));
        }
    };
    let close = move || {
        error.set(None);
        step.set(Step::Closed);
    };
    // With nobody selected there is nothing to act on: whatever was open closes.
    Effect::new(move |_| {
        if selection.is_empty() {
            close();
        }
    });
    let busy = move || step.with(Step::is_busy);
    let total_text = move || match exact {
        true => format::count(total),
        false => format!("{}+", format::count(total)),
    };
    let selected_text = move || {
        if selection.is_all_matching() {
            format!("All {} matching selected", total_text())
        } else {
            format!(
                "{} selected",
                format::count(selection.ticked_count() as u64)
            )
        }
    };
    let offer_all_matching = move || {
        selection.is_page_selected() && !selection.is_all_matching() && total > page_len as u64
    };

    view! {
        <Show when=move || !selection.is_empty()>
            <section class="bulk-bar" aria-label="Bulk actions" data-testid="bulk-bar">
                <p class="selected-count" role="status">
                    <strong data-testid="selected-count">{selected_text}</strong>
                    <Show when=offer_all_matching>
                        " "
                        <button type="button" class="link" on:click=move |_| selection.select_all_matching()>
                            {move || format!("Select all {} matching", total_text())}
                        </button>
                    </Show>
                    " "
                    <button type="button" class="link" on:click=move |_| selection.clear()>
                        "Clear selection"
                    </button>
                </p>
                <div class="bulk-buttons" role="group" aria-label="Actions">
                    {ActionKind::ALL.map(|kind| view! {
                        <button type="button" disabled=busy on:click=move |_| choose(kind)>{kind.label()}</button>
                    }).collect_view()}
                </div>
            </section>
        </Show>
        <Show when=move || error.with(Option::is_some)>
            <p class="error" role="alert" data-testid="bulk-error">{move || error.get()}</p>
        </Show>
        {move || match step.get() {
            Step::Closed => ().into_any(),
            Step::Form(kind) => view! {
                <BulkForm
                    kind
                    drafts
                    statuses
                    on_continue=Callback::new(count)
                    on_cancel=Callback::new(move |()| close())
                />
            }
            .into_any(),
            Step::Counting => view! { <p class="bulk-panel" role="status">"Counting the people affected…"</p> }.into_any(),
            Step::Confirm { request, people } => {
                let mut text = statuses.with_value(|statuses| question(&request, people, statuses));
                if let Some(at) = request.schedule().run_at {
                    text = format!("{text} It starts at {}.", local_time::local_minute(at));
                }
                let back = return_step(request.kind());
                view! {
                    <Confirmation
                        text
                        people
                        on_confirm=Callback::new(move |()| submit((*request).clone(), people))
                        on_back=Callback::new(move |()| step.set(back.clone()))
                    />
                }
                .into_any()
            }
            Step::Submitting => view! { <p class="bulk-panel" role="status">"Submitting…"</p> }.into_any(),
            Step::Submitted { task, people } => view! { <Submitted task people /> }.into_any(),
        }}
    }
}

/// "Change the status of 3 people to Inactive?" with Confirm and Back; focus moves to
/// Confirm, so Enter confirms and Tab reaches Back.
#[component]
fn Confirmation(
    text: String,
    people: u64,
    on_confirm: Callback<()>,
    on_back: Callback<()>,
) -> impl IntoView {
    let confirm = NodeRef::<html::Button>::new();
    let back = NodeRef::<html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = confirm.get().or_else(|| back.get()) {
            let _ = button.focus();
        }
    });
    view! {
        <section class="bulk-panel confirm" aria-label="Confirm">
            {if people == 0 {
                view! {
                    <p data-testid="bulk-question">
                        "Nobody in this selection is someone you may act on, so there is nothing to do."
                    </p>
                }
                .into_any()
            } else {
                view! {
                    <p data-testid="bulk-question">{text}</p>
                    <button type="button" node_ref=confirm on:click=move |_| on_confirm.run(())>"Confirm"</button>
                }
                .into_any()
            }}
            " "
            <button type="button" class="secondary" node_ref=back on:click=move |_| on_back.run(())>"Back"</button>
        </section>
    }
}

/// The new task and a link to it; focus moves to the link.
#[component]
fn Submitted(task: SubmittedTask, people: u64) -> impl IntoView {
    let link = NodeRef::<html::A>::new();
    Effect::new(move |_| {
        if let Some(link) = link.get() {
            let _ = link.focus();
        }
    });
    view! {
        <p class="bulk-panel done" role="status" data-testid="bulk-submitted">
            {format!(
                "{} task submitted for {}. ",
                task.label,
                format::plural(people, "person", "people")
            )}
            <a href=task.href node_ref=link>"View the task"</a>
            " or follow every task on "
            <a href="/tasks">"My tasks"</a>
            "."
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_returns_to_the_form_it_came_from() {
        assert_eq!(
            return_step(ActionKind::Email),
            Step::Form(ActionKind::Email)
        );
        assert_eq!(return_step(ActionKind::Watch), Step::Closed);
    }
}
