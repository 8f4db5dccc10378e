//! Small pieces of feedback and structure shared by the pages.

use leptos::prelude::*;

use crate::error::AppError;

/// An error, announced to screen readers as an alert.
#[component]
pub fn ErrorMessage(error: AppError) -> impl IntoView {
    view! { <p class="error" role="alert">{error.to_string()}</p> }
}

/// Why an admin page shows nothing: staff get `forbidden` (the page says for whom it is,
/// in a sentence that `admins_only` completes), anything else the error itself.
#[component]
pub fn AdminPageError(error: AppError, admins_only: &'static str) -> impl IntoView {
    match error {
        AppError::Forbidden(_) => view! {
            <p class="error" role="alert" data-testid="forbidden">{admins_only}</p>
        }
        .into_any(),
        error => view! { <ErrorMessage error /> }.into_any(),
    }
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
