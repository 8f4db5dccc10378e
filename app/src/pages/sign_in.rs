//! The sign-in page: the only page anonymous visitors can see.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::auth::SignIn;

/// Renders the sign-in form; a failed attempt shows why under the form.
#[component]
pub fn SignInPage() -> impl IntoView {
    let sign_in = ServerAction::<SignIn>::new();
    let error = move || {
        sign_in
            .value()
            .get()
            .and_then(|result| result.err())
            .map(|error| error.to_string())
    };
    view! {
        <Title text="Sign in · bulkq" />
        <main class="sign-in">
            <h1>"Sign in to bulkq"</h1>
            <ActionForm action=sign_in>
                <label for="username">"Username"</label>
                <input id="username" name="username" type="text" autocomplete="username" required />
                <label for="password">"Password"</label>
                <input
                    id="password"
                    name="password"
                    type="password"
                    autocomplete="current-password"
                    required
                />
                <button type="submit" disabled=move || sign_in.pending().get()>
                    "Sign in"
                </button>
            </ActionForm>
            <Show when=move || error().is_some()>
                <p class="error" role="alert">{error}</p>
            </Show>
        </main>
    }
}
