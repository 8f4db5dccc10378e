//! A running task's pace and the time it has left at that pace ("1,250 people/s · about
//! 2 min left"), from its progress and how long its attempt has run. It needs the browser's
//! clock, so it appears once the page has hydrated.

use bulkq_types::TaskStatus;
use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::api::tasks::TaskUpdate;
use crate::format;

/// Renders the pace of the task `update` describes, while it executes.
#[component]
pub fn Pace(update: Signal<TaskUpdate>, started: Option<DateTime<Utc>>) -> impl IntoView {
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let pace = move || {
        let update = update.get();
        if !hydrated.get() || update.status != TaskStatus::Executing {
            return None;
        }
        let elapsed = (crate::local_time::now() - started?).num_milliseconds() as f64 / 1000.0;
        format::pace(update.progress_done, update.progress_total, elapsed)
    };
    move || pace().map(|pace| view! { <span class="pace" data-testid="task-pace">{pace}</span> })
}
