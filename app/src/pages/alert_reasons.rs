//! Alert reasons, for admins: the list staff pick from when they raise an early alert. Add
//! one, or retire one (alerts that gave it keep it; adding its name again brings it back).
//! Staff get a 403.

use bulkq_types::alerts::{AlertReason, MAX_REASON_NAME_LEN};
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::alerts::{AddAlertReason, RetireAlertReason, managed_alert_reasons};
use crate::components::feedback::{AdminPageError, ErrorMessage, HeaderRow};
use crate::components::top_bar::TopBar;

/// Renders the Alert reasons page.
#[component]
pub fn AlertReasonsPage() -> impl IntoView {
    let add = ServerAction::<AddAlertReason>::new();
    let retire = ServerAction::<RetireAlertReason>::new();
    let reasons = Resource::new(
        move || (add.version().get(), retire.version().get()),
        |_| managed_alert_reasons(),
    );
    let refused = move || {
        [
            add.value().get().and_then(Result::err),
            retire.value().get().and_then(Result::err),
        ]
        .into_iter()
        .flatten()
        .next()
        .map(|error| view! { <ErrorMessage error /> })
    };
    view! {
        <Title text="Alert reasons · bulkq" />
        <TopBar />
        <main>
            <h1>"Alert reasons"</h1>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match reasons.await {
                        Ok(reasons) => view! {
                            <section aria-label="New reason">
                                <h2>"New reason"</h2>
                                <ActionForm action=add attr:class="inline-form">
                                    <label>
                                        "Name"
                                        <input
                                            name="name"
                                            type="text"
                                            required
                                            maxlength=MAX_REASON_NAME_LEN.to_string()
                                        />
                                    </label>
                                    <button type="submit" disabled=move || add.pending().get()>"Add"</button>
                                </ActionForm>
                            </section>
                            {refused}
                            <ReasonTable reasons retire />
                        }
                        .into_any(),
                        Err(error) => view! {
                            <AdminPageError error admins_only="Alert reasons are managed by administrators only." />
                        }
                        .into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

#[component]
fn ReasonTable(
    reasons: Vec<AlertReason>,
    retire: ServerAction<RetireAlertReason>,
) -> impl IntoView {
    view! {
        <div class="table-scroll">
        <table class="reasons">
            <HeaderRow columns=&["Reason", "Code", "State", "Action"] />
            <tbody>
                {reasons
                    .into_iter()
                    .map(|reason| {
                        let code = reason.code.clone();
                        let shown = reason.code.clone();
                        let label = format!("Retire {}", reason.name);
                        view! {
                            <tr data-code=reason.code>
                                <td>{reason.name}</td>
                                <td><code>{shown}</code></td>
                                <td>{if reason.retired { "retired" } else { "in use" }}</td>
                                <td>
                                    {(!reason.retired).then(|| view! {
                                        <button
                                            type="button"
                                            class="secondary"
                                            aria-label=label
                                            on:click=move |_| { retire.dispatch(RetireAlertReason { code: code.clone() }); }
                                        >
                                            "Retire"
                                        </button>
                                    })}
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        </div>
    }
}
