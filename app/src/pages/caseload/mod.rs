//! The caseload page: search people by name or school id, filter by program status, "my
//! caseload" and "watched by me", page through the results, select people (or everyone
//! matching) and run a bulk action on them. The search lives in the URL, so every result
//! page can be bookmarked, reloaded and rendered on the server.
//!
//! # Layout
//! - this module: the search form, the results table and its pager;
//! - [`selection`]: who is selected on a results page;
//! - [`bulk_bar`]: the bulk-action bar and each action's way from form to task;
//! - [`bulk_forms`]: the forms of the actions that ask for something.

mod alerts;
mod bulk_bar;
mod bulk_forms;
mod selection;

use std::collections::HashMap;

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::{PersonPage as Page, PersonSummary};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::api::caseload::{
    CaseloadQuery, CaseloadResults, ProgramStatusOption, list_program_statuses, search_caseload,
};
use crate::components::feedback::ErrorMessage;
use crate::components::top_bar::TopBar;
use crate::format;
use alerts::OpenAlerts;
use bulk_bar::BulkBar;
use selection::Selection;

/// The value a ticked filter checkbox puts in the URL.
const ON: &str = "true";

/// Renders the search form and one page of matching people.
#[component]
pub fn CaseloadPage() -> impl IntoView {
    let params = use_query_map();
    let query = Memo::new(move |_| {
        params.with(|p| CaseloadQuery {
            q: p.get("q").unwrap_or_default(),
            status: p.get("status").unwrap_or_default(),
            mine: p.get("mine").as_deref() == Some(ON),
            watched: p.get("watched").as_deref() == Some(ON),
            alerts: p.get("alerts").as_deref() == Some(ON),
            page: p.get("page").and_then(|n| n.parse().ok()).unwrap_or(0),
        })
    });
    let results = Resource::new(move || query.get(), search_caseload);
    let statuses = Resource::new(|| (), |_| list_program_statuses());

    view! {
        <Title text="Caseload · bulkq" />
        <TopBar />
        <main>
            <h1>"Caseload"</h1>
            <Form method="GET" action="">
                <div class="search-bar" role="search">
                    <label for="q">"Name or school id"</label>
                    <input id="q" name="q" type="search" prop:value=move || query.get().q />
                    <label for="status">"Program status"</label>
                    <select id="status" name="status">
                        <option value="">"Any status"</option>
                        <Transition fallback=|| ()>
                            {move || Suspend::new(async move {
                                let selected = query.get().status;
                                statuses
                                    .await
                                    .unwrap_or_default()
                                    .into_iter()
                                    .map(|s| {
                                        let is_selected = s.code == selected;
                                        view! {
                                            <option value=s.code selected=is_selected>{s.name}</option>
                                        }
                                    })
                                    .collect_view()
                            })}
                        </Transition>
                    </select>
                    <label class="check">
                        <input type="checkbox" name="mine" value=ON prop:checked=move || query.get().mine />
                        "My caseload"
                    </label>
                    <label class="check">
                        <input type="checkbox" name="watched" value=ON prop:checked=move || query.get().watched />
                        "Watched by me"
                    </label>
                    <label class="check">
                        <input type="checkbox" name="alerts" value=ON prop:checked=move || query.get().alerts />
                        "Has open alerts"
                    </label>
                    <button type="submit">"Search"</button>
                </div>
            </Form>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let statuses = statuses.await.unwrap_or_default();
                    match results.await {
                        Ok(CaseloadResults { page, filter }) => {
                            view! { <Results page query=query.get() filter statuses /> }.into_any()
                        }
                        Err(error) => {
                            view! { <ErrorMessage error /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

/// The results table with its summary line, selection, bulk-action bar and pager. Each
/// results page starts with nobody selected.
#[component]
fn Results(
    page: Page,
    query: CaseloadQuery,
    filter: PersonFilter,
    statuses: Vec<ProgramStatusOption>,
) -> impl IntoView {
    if page.people.is_empty() {
        return view! { <p class="empty" data-testid="result-summary">"No people match this search."</p> }
            .into_any();
    }
    let first = page.page * page.page_size + 1;
    let last = first + page.people.len() as u64 - 1;
    let total = if page.total_is_exact {
        format::count(page.total)
    } else {
        format!("{}+", format::count(page.total))
    };
    let summary = format!(
        "{}–{} of {total} people",
        format::count(first),
        format::count(last)
    );
    let selection = Selection::new(page.people.iter().map(|p| p.id).collect());
    let status_names: HashMap<String, String> = statuses
        .iter()
        .map(|s| (s.code.clone(), s.name.clone()))
        .collect();
    let statuses = StoredValue::new(statuses);
    let pager = Pager(PagerProps {
        page: page.clone(),
        query: query.clone(),
    });
    view! {
        <p data-testid="result-summary">{summary}</p>
        <BulkBar
            selection
            filter
            total=page.total
            exact=page.total_is_exact
            page_len=page.people.len()
            statuses
        />
        <div class="table-scroll">
            <table class="caseload">
                <thead>
                    <tr>
                        <th scope="col" class="select">
                            <input
                                type="checkbox"
                                aria-label="Select all on this page"
                                prop:checked=move || selection.is_page_selected()
                                on:change=move |ev| selection.set_page(event_target_checked(&ev))
                            />
                        </th>
                        <th scope="col">"Name"</th>
                        <th scope="col">"School id"</th>
                        <th scope="col">"Email"</th>
                        <th scope="col">"Program status"</th>
                        <th scope="col">"Open alerts"</th>
                    </tr>
                </thead>
                <tbody>
                    {page
                        .people
                        .into_iter()
                        .map(|person| person_row(person, selection, &status_names))
                        .collect_view()}
                </tbody>
            </table>
        </div>
        {pager}
    }
    .into_any()
}

fn person_row(
    person: PersonSummary,
    selection: Selection,
    status_names: &HashMap<String, String>,
) -> impl IntoView {
    let id = person.id;
    let status = status_names
        .get(&person.program_status)
        .cloned()
        .unwrap_or(person.program_status);
    let label = format!(
        "Select {} {} ({})",
        person.first_name, person.last_name, person.school_id
    );
    let school_id = person.school_id.clone();
    view! {
        <tr data-school-id=school_id>
            <td class="select">
                <input
                    type="checkbox"
                    aria-label=label
                    prop:checked=move || selection.is_selected(id)
                    on:change=move |ev| selection.set(id, event_target_checked(&ev))
                />
            </td>
            <td class="name">{format!("{}, {}", person.last_name, person.first_name)}</td>
            <td>{person.school_id}</td>
            <td>{person.email.unwrap_or_default()}</td>
            <td data-testid="program-status">{status}</td>
            <td data-testid="open-alerts">
                <OpenAlerts person_id=id count=person.open_alerts />
            </td>
        </tr>
    }
}

/// Previous/next links that keep the search and move one page.
#[component]
fn Pager(page: Page, query: CaseloadQuery) -> impl IntoView {
    let page_count = page.page_count();
    let current = page.page;
    let link = move |to: u64| {
        caseload_href(&CaseloadQuery {
            page: to,
            ..query.clone()
        })
    };
    view! {
        <nav class="pager" aria-label="Pages">
            {(current > 0).then(|| view! { <a href=link(current - 1) rel="prev">"← Previous"</a> })}
            <span>
                {format!("Page {} of {}", format::count(current + 1), format::count(page_count))}
            </span>
            {(current + 1 < page_count)
                .then(|| view! { <a href=link(current + 1) rel="next">"Next →"</a> })}
        </nav>
    }
}

/// The caseload URL of a search; unticked filters are left out, as the search form does.
fn caseload_href(query: &CaseloadQuery) -> String {
    let mut url = form_urlencoded::Serializer::new(String::new());
    url.append_pair("q", &query.q)
        .append_pair("status", &query.status);
    let filters = [
        ("mine", query.mine),
        ("watched", query.watched),
        ("alerts", query.alerts),
    ];
    for (name, on) in filters {
        if on {
            url.append_pair(name, ON);
        }
    }
    url.append_pair("page", &query.page.to_string());
    format!("/?{}", url.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pager_keeps_the_search_and_encodes_it() {
        let query = CaseloadQuery {
            q: "o'brien & co".into(),
            status: "ACTIVE".into(),
            page: 3,
            ..CaseloadQuery::default()
        };
        assert_eq!(
            caseload_href(&query),
            "/?q=o%27brien+%26+co&status=ACTIVE&page=3"
        );
        let mine = CaseloadQuery {
            mine: true,
            watched: true,
            alerts: true,
            ..query
        };
        assert_eq!(
            caseload_href(&mine),
            "/?q=o%27brien+%26+co&status=ACTIVE&mine=true&watched=true&alerts=true&page=3"
        );
    }
}
