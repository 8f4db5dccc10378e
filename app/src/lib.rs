//! The bulkq dashboard: Leptos pages rendered on the server and hydrated in the browser,
//! and the server functions they call.
//!
//! # Layout
//! - [`api`]: server functions, grouped by resource, and their wire types.
//! - [`pages`]: one module per route.
//! - [`components`]: pieces shared by several pages.
//! - [`error`]: [`error::AppError`], the one error that crosses the wire.
//! - [`format`]: numbers for people to read.
//! - [`live`]: the browser's end of the live task stream.
//! - [`local_time`]: times in the browser's time zone.

pub mod api;
pub mod components;
pub mod error;
pub mod format;
pub mod live;
pub mod local_time;
pub mod pages;
pub mod theme;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{ParamSegment, SsrMode, StaticSegment};

use crate::pages::{
    account::AccountPage,
    alert_reasons::AlertReasonsPage,
    audit::AuditPage,
    caseload::CaseloadPage,
    imports::{ImportPreviewPage, ImportsPage},
    not_found::NotFound,
    queue_health::QueueHealthPage,
    sign_in::SignInPage,
    task_detail::TaskDetailPage,
    tasks::{AllTasksPage, MyTasksPage},
    users::UsersPage,
};

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    content_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=theme::current().attribute()>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// Sends the page's Content Security Policy: scripts only from this site or inline with this
/// response's nonce (which Leptos puts on every script it renders), WebAssembly allowed, no
/// plugins, no framing. Styles may be inline: the pages size progress bars with `style`.
#[cfg(feature = "ssr")]
fn content_security_policy() {
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    );
    if let Ok(value) = http::HeaderValue::from_str(&policy) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The application: its stylesheet, title and routes.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    mark_hydrated();
    view! {
        <Stylesheet id="leptos" href="/pkg/bulkq.css" />
        <Title text="bulkq" />
        <Router>
            <Routes fallback=NotFound>
                <Route path=StaticSegment("") view=CaseloadPage />
                <Route path=StaticSegment("login") view=SignInPage />
                <Route path=StaticSegment("tasks") view=MyTasksPage />
                <Route path=StaticSegment("account") view=AccountPage />
                <Route
                    path=(StaticSegment("admin"), StaticSegment("users"))
                    view=UsersPage
                    ssr=SsrMode::Async
                />
                <Route path=(StaticSegment("admin"), StaticSegment("tasks")) view=AllTasksPage />
                <Route
                    path=(StaticSegment("admin"), StaticSegment("audit"))
                    view=AuditPage
                    ssr=SsrMode::Async
                />
                <Route
                    path=(StaticSegment("admin"), StaticSegment("alert-reasons"))
                    view=AlertReasonsPage
                    ssr=SsrMode::Async
                />
                <Route path=(StaticSegment("admin"), StaticSegment("imports")) view=ImportsPage />
                // Rendered whole, so a staff visitor's 403 sets the status.
                <Route
                    path=(StaticSegment("admin"), StaticSegment("imports"), ParamSegment("id"))
                    view=ImportPreviewPage
                    ssr=SsrMode::Async
                />
                // Rendered whole before anything is sent, so a staff visitor's 403 can still
                // set the status (a streamed page would already have sent 200).
                <Route
                    path=(StaticSegment("admin"), StaticSegment("queue"))
                    view=QueueHealthPage
                    ssr=SsrMode::Async
                />
                // Rendered whole too, so another user's task answers 404, not a streamed 200.
                <Route
                    path=(StaticSegment("tasks"), ParamSegment("id"))
                    view=TaskDetailPage
                    ssr=SsrMode::Async
                />
            </Routes>
        </Router>
    }
}

/// Sets `data-hydrated` on `<body>` once the WASM has taken over the page. Effects run only
/// in the browser, so the attribute tells tests (and curious people) that clicks now reach
/// the app rather than the server-rendered HTML.
fn mark_hydrated() {
    Effect::new(move |_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
}
