//! A waiting task's steer, on its page: run it now, or move it to another time or priority.
//! Its owner and admins see it; the server checks both again, and keeps staff to the
//! priorities the forms offer.

use bulkq_types::task::RescheduleRequest;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use uuid::Uuid;

use crate::api::bulk::PRIORITIES;
use crate::api::tasks::RescheduleTask;
use crate::local_time;

/// The priority's words: a form's choice by name, any other value as its number.
pub fn priority_words(priority: i32) -> String {
    PRIORITIES
        .iter()
        .find(|(value, _)| *value == priority)
        .map_or_else(|| priority.to_string(), |(_, label)| (*label).to_owned())
}

/// "Run now", and a form for a new start time (local) and priority. `action` is the page's,
/// so the page reloads once it has moved the task.
#[component]
pub fn Reschedule(id: Uuid, priority: i32, action: ServerAction<RescheduleTask>) -> impl IntoView {
    let start_at = RwSignal::new(String::new());
    let chosen = RwSignal::new(priority);
    let error = move || {
        action
            .value()
            .get()
            .and_then(Result::err)
            .map(|error| error.to_string())
    };
    let send = move |request| {
        action.dispatch(RescheduleTask { id, request });
    };
    let run_now = move |_| {
        send(RescheduleRequest {
            run_at: Some(local_time::now()),
            priority: None,
        })
    };
    let save = move |ev: SubmitEvent| {
        ev.prevent_default();
        let picked = chosen.get_untracked();
        send(RescheduleRequest {
            run_at: local_time::from_local_input(&start_at.get_untracked()),
            priority: (picked != priority).then_some(picked),
        });
    };
    // A priority outside the forms' choices (an admin's, through the API) stays offered.
    let mut choices: Vec<(i32, String)> = PRIORITIES
        .iter()
        .map(|(value, label)| (*value, (*label).to_owned()))
        .collect();
    if !choices.iter().any(|(value, _)| *value == priority) {
        choices.push((priority, priority_words(priority)));
    }
    view! {
        <section class="reschedule" aria-label="Reschedule">
            <h2>"Reschedule"</h2>
            <button type="button" data-testid="run-now" on:click=run_now disabled=move || action.pending().get()>
                "Run now"
            </button>
            <form on:submit=save>
                <label for="reschedule-at">"Start at"</label>
                <input
                    id="reschedule-at"
                    type="datetime-local"
                    aria-describedby="reschedule-at-hint"
                    bind:value=start_at
                />
                <p class="hint" id="reschedule-at-hint">"Your local time; leave empty to keep it."</p>
                <label for="reschedule-priority">"Priority"</label>
                <select
                    id="reschedule-priority"
                    on:change=move |ev| chosen.set(event_target_value(&ev).parse().unwrap_or(priority))
                >
                    {choices
                        .into_iter()
                        .map(|(value, label)| view! {
                            <option value=value.to_string() selected=value == priority>{label}</option>
                        })
                        .collect_view()}
                </select>
                <button type="submit" data-testid="reschedule" disabled=move || action.pending().get()>
                    "Reschedule"
                </button>
            </form>
            <Show when=move || error().is_some()>
                <p class="error" role="alert">{error}</p>
            </Show>
        </section>
    }
}
