//! Small pieces of feedback and structure shared by the pages.

use leptos::prelude::*;

use crate::error::AppError;

/// An error, announced to screen readers as an alert.
#[component]
pub fn ErrorMessage(error: AppError) -> impl IntoView {
    view! { <p class="error" role="alert">{error.to_string()}</p> }
}

/// A table's header row from its column names.
#[component]
pub fn HeaderRow(columns: &'static [&'static str]) -> impl IntoView {
    view! {
        <thead>
            <tr>{columns.iter().map(|name| view! { <th scope="col">{*name}</th> }).collect_view()}</tr>
        </thead>
    }
}
