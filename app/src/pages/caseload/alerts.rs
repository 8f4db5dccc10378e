//! A person's open early alerts in the caseload table: the count, and on demand the list
//! with a Close button for each.

use bulkq_types::alerts::EarlyAlert;
use leptos::prelude::*;
use uuid::Uuid;

use crate::api::alerts::{CloseAlert, person_alerts};
use crate::components::feedback::ErrorMessage;
use crate::format;

/// "2 open", which opens the person's alerts; "—" for none.
#[component]
pub fn OpenAlerts(person_id: Uuid, count: u32) -> impl IntoView {
    let open = RwSignal::new(false);
    let close = ServerAction::<CloseAlert>::new();
    let remaining = RwSignal::new(count);
    // A closed alert leaves the count.
    Effect::new(move |_| {
        if let Some(Ok(_)) = close.value().get() {
            remaining.update(|n| *n = n.saturating_sub(1));
        }
    });
    let alerts = Resource::new(
        move || (open.get(), close.version().get()),
        move |(open, _)| async move {
            match open {
                true => person_alerts(person_id).await.map(Some),
                false => Ok(None),
            }
        },
    );
    view! {
        {move || match remaining.get() {
            0 if !open.get() => view! { <span class="muted">"—"</span> }.into_any(),
            n => view! {
                <button
                    type="button"
                    class="link"
                    aria-expanded=move || open.get().to_string()
                    on:click=move |_| open.update(|o| *o = !*o)
                >
                    {format!("{} open", format::count(u64::from(n)))}
                </button>
            }
            .into_any(),
        }}
        {move || close.value().get().and_then(Result::err).map(|error| view! { <ErrorMessage error /> })}
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                match alerts.await {
                    Ok(Some(alerts)) => view! { <AlertList alerts close /> }.into_any(),
                    Ok(None) => ().into_any(),
                    Err(error) => view! { <ErrorMessage error /> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The person's open alerts, each with what it says and a Close button.
#[component]
fn AlertList(alerts: Vec<EarlyAlert>, close: ServerAction<CloseAlert>) -> impl IntoView {
    let open: Vec<EarlyAlert> = alerts
        .into_iter()
        .filter(|a| a.closed_at.is_none())
        .collect();
    if open.is_empty() {
        return view! { <p class="empty">"No open alerts."</p> }.into_any();
    }
    view! {
        <ul class="alert-list">
            {open
                .into_iter()
                .map(|alert| {
                    let id = alert.id;
                    let label = format!("Close the alert for {}", alert.course);
                    view! {
                        <li data-testid="open-alert">
                            <strong>{alert.course}</strong>
                            ": "
                            {alert.reason_names.join(", ")}
                            {(!alert.suggestion.is_empty())
                                .then(|| view! { <br /> "Suggestion: " {alert.suggestion}})}
                            {(!alert.comment.is_empty())
                                .then(|| view! { <br /> "Comment: " {alert.comment}})}
                            " "
                            <button
                                type="button"
                                class="secondary"
                                aria-label=label
                                on:click=move |_| { close.dispatch(CloseAlert { alert_id: id }); }
                            >
                                "Close"
                            </button>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}
