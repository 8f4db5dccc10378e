//! The bar across the top of every signed-in page: product name, navigation, the theme
//! toggle, the bell of finished tasks, the user and a sign-out button.

use leptos::prelude::*;

use crate::api::auth::{SignOut, get_current_user};
use crate::components::bell::Bell;
use crate::theme;

/// Renders the top bar with the signed-in user's name and a sign-out button.
#[component]
pub fn TopBar() -> impl IntoView {
    let user = Resource::new(|| (), |_| get_current_user());
    let sign_out = ServerAction::<SignOut>::new();
    let theme = RwSignal::new(theme::current());
    let toggle_theme = move |_| {
        let next = theme.get_untracked().next();
        theme.set(next);
        theme::apply(next);
    };
    view! {
        <header class="top-bar">
            <a class="brand" href="/">"bulkq"</a>
            <nav aria-label="Main">
                <a href="/">"Caseload"</a>
                <a href="/tasks">"My tasks"</a>
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        let is_admin = user.await.ok().flatten().is_some_and(|u| u.is_admin);
                        is_admin.then(|| view! {
                            <a href="/admin/tasks">"All tasks"</a>
                            <a href="/admin/queue">"Queue health"</a>
                            <a href="/admin/users">"Users"</a>
                            <a href="/admin/imports">"Import people"</a>
                            <a href="/admin/alert-reasons">"Alert reasons"</a>
                            <a href="/admin/audit">"Audit"</a>
                        })
                    })}
                </Transition>
            </nav>
            <div class="who">
                <button
                    type="button"
                    class="secondary"
                    data-testid="theme-toggle"
                    title="Light, dark, or as the system says"
                    on:click=toggle_theme
                >
                    {move || theme.get().label()}
                </button>
                <Bell />
                <Transition fallback=|| ()>
                    {move || Suspend::new(async move {
                        user.await
                            .ok()
                            .flatten()
                            .map(|user| {
                                view! {
                                    <a class="user-name" href="/account" data-testid="user-name" title="Your account">
                                        {user.display_name}
                                        {user.is_admin.then_some(" (admin)")}
                                    </a>
                                }
                            })
                    })}
                </Transition>
                <ActionForm action=sign_out>
                    <button type="submit" class="secondary">"Sign out"</button>
                </ActionForm>
            </div>
        </header>
    }
}
