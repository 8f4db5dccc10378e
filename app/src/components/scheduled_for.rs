//! "Scheduled for 2026-11-25 15:30 (in 4 min)": when a waiting task will start, in the
//! reader's local time, counting down.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::{format, local_time};

/// The start time of a task that waits for it (`run_at`, RFC 3339). The server renders it
/// in UTC; the browser switches to local time and ticks every second.
#[component]
pub fn ScheduledFor(run_at: String) -> impl IntoView {
    let at = DateTime::parse_from_rfc3339(&run_at)
        .ok()
        .map(|t| t.with_timezone(&Utc));
    let now = RwSignal::new(None::<DateTime<Utc>>);
    Effect::new(move |_| {
        now.set(Some(local_time::now()));
        if let Ok(ticker) = set_interval_with_handle(
            move || now.set(Some(local_time::now())),
            std::time::Duration::from_secs(1),
        ) {
            on_cleanup(move || ticker.clear());
        }
    });
    let text = move || match (at, now.get()) {
        (Some(at), Some(now)) if at > now => format!(
            "Scheduled for {} (in {})",
            local_time::local_minute(at),
            format::countdown((at - now).num_seconds() + 1)
        ),
        (Some(_), Some(_)) => "Due now, starting soon".to_owned(),
        _ => format!("Scheduled for {}", format::minute(&run_at)),
    };
    view! { <span class="scheduled" data-testid="scheduled-for">{text}</span> }
}
