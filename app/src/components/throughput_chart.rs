//! A bar chart of tasks completed per minute, drawn as SVG by the app itself (no chart
//! library, no external service): one bar per minute, oldest on the left.

use leptos::prelude::*;

use crate::format;

const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 120.0;

/// Renders the chart; `per_minute` is oldest first.
#[component]
pub fn ThroughputChart(per_minute: Vec<i64>) -> impl IntoView {
    let total: i64 = per_minute.iter().sum();
    let peak = per_minute.iter().copied().max().unwrap_or(0);
    let minutes = per_minute.len().max(1);
    let slot = WIDTH / minutes as f64;
    let description = format!(
        "Tasks completed per minute over the last {minutes} minutes: {} in all, at most {} in one minute.",
        format::count(total.max(0) as u64),
        format::count(peak.max(0) as u64)
    );
    let bars = per_minute
        .into_iter()
        .enumerate()
        .filter(|(_, count)| *count > 0)
        .map(|(i, count)| {
            let height = (count as f64 / peak.max(1) as f64 * (HEIGHT - 4.0)).max(1.0);
            view! {
                <rect
                    x=format!("{:.1}", i as f64 * slot + 1.0)
                    y=format!("{:.1}", HEIGHT - height)
                    width=format!("{:.1}", (slot - 2.0).max(1.0))
                    height=format!("{height:.1}")
                >
                    <title>{format!("{count} completed, {} min ago", minutes - i)}</title>
                </rect>
            }
        })
        .collect_view();
    view! {
        <figure class="throughput">
            <svg
                viewBox=format!("0 0 {WIDTH} {HEIGHT}")
                role="img"
                aria-label=description.clone()
                data-testid="throughput-chart"
                preserveAspectRatio="none"
            >
                <line x1="0" y1=HEIGHT x2=WIDTH y2=HEIGHT class="axis" />
                {bars}
            </svg>
            <figcaption>
                <span>{format!("{minutes} min ago")}</span>
                <span>{description}</span>
                <span>"now"</span>
            </figcaption>
        </figure>
    }
}
