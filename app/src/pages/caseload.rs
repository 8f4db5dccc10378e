//! The caseload page: search people by name or school id, filter by program status, and page
//! through the results. The search lives in the URL, so every result page can be bookmarked,
//! reloaded and rendered on the server.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::Form;
use leptos_router::hooks::use_query_map;

use crate::api::caseload::{
    CaseloadPage as Page, CaseloadQuery, PersonRow, list_program_statuses, search_caseload,
};
use crate::components::feedback::{ErrorMessage, HeaderRow};
use crate::components::top_bar::TopBar;
use crate::format;

/// Renders the search form and one page of matching people.
#[component]
pub fn CaseloadPage() -> impl IntoView {
    let params = use_query_map();
    let query = move || {
        params.with(|p| CaseloadQuery {
            q: p.get("q").unwrap_or_default(),
            status: p.get("status").unwrap_or_default(),
            page: p.get("page").and_then(|n| n.parse().ok()).unwrap_or(0),
        })
    };
    let results = Resource::new(query, search_caseload);
    let statuses = Resource::new(|| (), |_| list_program_statuses());

    view! {
        <Title text="Caseload · bulkq" />
        <TopBar />
        <main>
            <h1>"Caseload"</h1>
            <Form method="GET" action="">
                <div class="search-bar" role="search">
                    <label for="q">"Name or school id"</label>
                    <input id="q" name="q" type="search" prop:value=move || query().q />
                    <label for="status">"Program status"</label>
                    <select id="status" name="status">
                        <option value="">"Any status"</option>
                        <Transition fallback=|| ()>
                            {move || Suspend::new(async move {
                                let selected = query().status;
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
                    <button type="submit">"Search"</button>
                </div>
            </Form>
            <Transition fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match results.await {
                        Ok(page) => view! { <Results page query=query() /> }.into_any(),
                        Err(error) => {
                            view! { <ErrorMessage error /> }.into_any()
                        }
                    }
                })}
            </Transition>
        </main>
    }
}

/// The results table with its summary line and pager.
#[component]
fn Results(page: Page, query: CaseloadQuery) -> impl IntoView {
    if page.people.is_empty() {
        return view! { <p class="empty" data-testid="result-summary">"No people match this search."</p> }
            .into_any();
    }
    let first = page.page * page.page_size + 1;
    let last = first + page.people.len() as u64 - 1;
    let summary = format!(
        "{}–{} of {} people",
        format::count(first),
        format::count(last),
        format::count(page.total)
    );
    let pager = Pager(PagerProps {
        page: page.clone(),
        query,
    });
    view! {
        <p data-testid="result-summary">{summary}</p>
        <div class="table-scroll">
            <table class="caseload">
                <HeaderRow columns=&["Name", "School id", "Email", "Program status"] />
                <tbody>{page.people.into_iter().map(person_row).collect_view()}</tbody>
            </table>
        </div>
        {pager}
    }
    .into_any()
}

fn person_row(person: PersonRow) -> impl IntoView {
    view! {
        <tr>
            <td>{format!("{}, {}", person.last_name, person.first_name)}</td>
            <td>{person.school_id}</td>
            <td>{person.email.unwrap_or_default()}</td>
            <td>{person.program_status}</td>
        </tr>
    }
}

/// Previous/next links that keep the search and move one page.
#[component]
fn Pager(page: Page, query: CaseloadQuery) -> impl IntoView {
    let page_count = page.page_count();
    let current = page.page;
    let link = move |to: u64| caseload_href(&query.q, &query.status, to);
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

/// The caseload URL for a search and page.
fn caseload_href(q: &str, status: &str, page: u64) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("q", q)
        .append_pair("status", status)
        .append_pair("page", &page.to_string())
        .finish();
    format!("/?{query}")
}

#[cfg(test)]
mod tests {
    use super::caseload_href;

    #[test]
    fn the_pager_keeps_the_search_and_encodes_it() {
        assert_eq!(
            caseload_href("o'brien & co", "ACTIVE", 3),
            "/?q=o%27brien+%26+co&status=ACTIVE&page=3"
        );
    }
}
