//! The page for any path the app does not know.

use leptos::prelude::*;

/// Renders a 404 page with a way back.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <main class="narrow">
            <h1>"Page not found"</h1>
            <p>"There is nothing at this address. " <a href="/">"Go to the caseload"</a></p>
        </main>
    }
}
