//! Audit, for admins (`/admin/audit`): who did what to which targets, when and from where,
//! newest first. The filters (who, area, target text, days) live in the URL, so a view can
//! be shared; the same filters download as CSV. Staff get a 403.

use bulkq_types::audit::{AuditArea, AuditEntry, AuditPage, AuditQuery};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_location;

use crate::api::audit::{AUDIT_CSV_PATH, list_audit};
use crate::components::feedback::{AdminPageError, HeaderRow};
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;

/// Renders the Audit page.
#[component]
pub fn AuditPage() -> impl IntoView {
    let location = use_location();
    let query = Memo::new(move |_| AuditQuery::from_query_string(&location.search.get()));
    let entries = Resource::new(
        move || query.get(),
        |query| async move {
            match query {
                Ok(query) => list_audit(query).await,
                Err(problem) => Err(AppError::BadRequest(format!("This address: {problem}."))),
            }
        },
    );
    view! {
        <Title text="Audit · bulkq" />
        <TopBar />
        <main>
            <h1>"Audit"</h1>
            {move || view! { <Filters query=query.get().unwrap_or_default() /> }}
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let query = query.get().unwrap_or_default();
                    match entries.await {
                        Ok(page) => view! { <Entries page query /> }.into_any(),
                        Err(error) => view! {
                            <AdminPageError error admins_only="The audit trail is for administrators only." />
                        }
                        .into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

/// The filter form: a GET form, so applying it changes the URL (and works without script).
#[component]
fn Filters(query: AuditQuery) -> impl IntoView {
    let text = |field: &Option<String>| field.clone().unwrap_or_default();
    let area = text(&query.area);
    view! {
        <Form method="GET" action="">
            <div class="search-bar filters" role="search" aria-label="Filter the audit trail">
                <label for="audit-who">"Who"</label>
                <input id="audit-who" name="who" type="text" maxlength="160" value=text(&query.who) />
                <label for="audit-area">"What"</label>
                <select id="audit-area" name="area">
                    <option value="">"Anything"</option>
                    {AuditArea::ALL.map(|choice| view! {
                        <option value=choice.as_str() selected=area == choice.as_str()>{choice.label()}</option>
                    }).collect_view()}
                </select>
                <label for="audit-target">"Target contains"</label>
                <input id="audit-target" name="target" type="search" maxlength="200" value=text(&query.target) />
                <label for="audit-from">"From (UTC)"</label>
                <input id="audit-from" name="from" type="date" value=text(&query.from) />
                <label for="audit-to">"to"</label>
                <input id="audit-to" name="to" type="date" value=text(&query.to) />
                <button type="submit">"Apply"</button>
                <a href="/admin/audit">"Clear"</a>
            </div>
        </Form>
    }
}

/// A page of entries, the CSV of every entry the filters match, and the way on.
#[component]
fn Entries(page: AuditPage, query: AuditQuery) -> impl IntoView {
    let link = |before: Option<String>| {
        let query = AuditQuery {
            before,
            ..query.clone()
        };
        format!("?{}", query.to_query_string())
    };
    let newer = query.before.is_some().then(|| link(None));
    let older = page.next.clone().map(|next| link(Some(next)));
    let csv = format!("{AUDIT_CSV_PATH}?{}", query.whole().to_query_string());
    if page.entries.is_empty() {
        return view! { <p class="empty" data-testid="audit-empty">"Nothing recorded matches."</p> }
            .into_any();
    }
    view! {
        <p>
            <a href=csv download="" data-testid="audit-csv">"Download as CSV"</a>
        </p>
        <div class="table-scroll" tabindex="0">
            <table class="audit" data-testid="audit">
                <HeaderRow columns=&["When", "Who", "Did", "To", "Details", "From"] />
                <tbody>
                    {page.entries.into_iter().map(|entry| view! { <EntryRow entry /> }).collect_view()}
                </tbody>
            </table>
        </div>
        <nav class="pager" aria-label="Pages">
            {newer.map(|href| view! { <a href=href rel="prev">"← Newest"</a> })}
            {older.map(|href| view! { <a href=href rel="next" data-testid="older">"Older →"</a> })}
        </nav>
    }
    .into_any()
}

#[component]
fn EntryRow(entry: AuditEntry) -> impl IntoView {
    let targets = entry.targets_words();
    view! {
        <tr data-testid="audit-entry" data-act=entry.act.as_str()>
            <td><time datetime=entry.at.clone()>{format::second(&entry.at)}</time></td>
            <td>{entry.actor}</td>
            <td>{entry.act.label()}</td>
            <td class="audit-targets">{targets}</td>
            <td>{entry.detail}</td>
            <td>{entry.client}</td>
        </tr>
    }
}
