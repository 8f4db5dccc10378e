//! Importing people from a CSV file, for admins, in three steps: upload the file (a plain
//! form, streamed to the server), read its preview (columns matched to fields, with a form
//! to match the rest; its first rows; every row that cannot be imported; how many people it
//! would create, change, leave alone or retire), then import it as a queue task, followed
//! on the task's page. Staff get a 403.

use bulkq_types::people_import::{ColumnMapping, FIELDS, ImportPreview, REQUIRED};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};
use uuid::Uuid;

use crate::api::imports::{DiscardImport, ImportDraft, StartPeopleImport, preview_import};
use crate::components::feedback::{AdminPageError, ErrorMessage, HeaderRow};
use crate::components::top_bar::TopBar;
use crate::error::AppError;
use crate::format;

/// The query parameter saying the file is to be synced in full.
const FULL_SYNC: &str = "full_sync";

/// Renders the upload form.
#[component]
pub fn ImportsPage() -> impl IntoView {
    let query = use_query_map();
    let refused = move || query.with(|query| query.get("error"));
    view! {
        <Title text="Import people · bulkq" />
        <TopBar />
        <main>
            <h1>"Import people"</h1>
            <p>
                "A CSV file from the school's records, one person per row, with a header row. "
                "Columns are matched to fields by their names; you can match the rest before anything is imported. "
                "A person is found by school id: the same file imported again changes nothing."
            </p>
            {move || refused().map(|reason| view! { <p class="error" role="alert">{reason}</p> })}
            <form class="upload-form" method="post" action="/admin/imports/upload" enctype="multipart/form-data">
                <label>"CSV file" <input name="file" type="file" accept=".csv,text/csv" required /></label>
                <button type="submit">"Upload and preview"</button>
            </form>
        </main>
    }
}

/// Renders an uploaded file's preview, with the mapping and full-sync choice in the URL.
#[component]
pub fn ImportPreviewPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let upload_id = move || params.with(|p| p.get("id").and_then(|id| Uuid::parse_str(&id).ok()));
    let choice = move || {
        query.with(|query| {
            (
                mapping_from(query),
                query.get(FULL_SYNC).as_deref() == Some("true"),
            )
        })
    };
    let draft = Resource::new(
        move || (upload_id(), choice()),
        |(id, (mapping, full_sync))| async move {
            match id {
                Some(id) => preview_import(id, mapping, full_sync).await,
                None => Err(AppError::NotFound("Upload".into())),
            }
        },
    );
    view! {
        <Title text="Import preview · bulkq" />
        <TopBar />
        <main>
            <p><a href="/admin/imports">"← Import people"</a></p>
            <Transition fallback=|| view! { <p>"Reading the file…"</p> }>
                {move || Suspend::new(async move {
                    let full_sync = choice().1;
                    match draft.await {
                        Ok(draft) => view! { <Draft draft full_sync /> }.into_any(),
                        Err(error) => view! {
                            <AdminPageError error admins_only="People are imported by administrators only." />
                        }
                        .into_any(),
                    }
                })}
            </Transition>
        </main>
    }
}

/// The mapping the URL asks for: each field's column number, empty for none; `None` when
/// the URL names no field (the header's guess is used).
fn mapping_from(query: &leptos_router::params::ParamsMap) -> Option<ColumnMapping> {
    let column = |field: &str| query.get(field).and_then(|value| value.parse().ok());
    FIELDS
        .iter()
        .any(|(field, _)| query.get(field).is_some())
        .then(|| ColumnMapping {
            school_id: column("school_id"),
            first_name: column("first_name"),
            last_name: column("last_name"),
            email: column("email"),
            program_status: column("program_status"),
            coach: column("coach"),
        })
}

#[component]
fn Draft(draft: ImportDraft, full_sync: bool) -> impl IntoView {
    let heading = format!("Import {}", draft.file_name);
    let size = format::bytes(draft.byte_size);
    let body = match (draft.task_id, draft.preview) {
        (Some(task_id), _) => view! {
            <p role="status">
                "This file is being imported, or was: "
                <a href=format!("/tasks/{task_id}")>"see its task"</a>"."
            </p>
        }
        .into_any(),
        (None, Some(preview)) => {
            view! { <Preview upload_id=draft.upload_id preview full_sync /> }.into_any()
        }
        (None, None) => ().into_any(),
    };
    view! {
        <h1>{heading}</h1>
        <p><small>{size}</small></p>
        {body}
    }
}

#[component]
fn Preview(upload_id: Uuid, preview: ImportPreview, full_sync: bool) -> impl IntoView {
    let ready = preview.mapping_problems.is_empty();
    let mapping = preview.mapping.clone();
    view! {
        <MappingForm preview=preview.clone() full_sync />
        {ready.then(|| view! {
            <FirstRows header=preview.header.clone() rows=preview.first_rows.clone() />
            <Counts preview=preview.clone() full_sync />
            <Problems preview=preview.clone() />
            <Confirm upload_id mapping full_sync rows=preview.rows />
        })}
    }
}

/// One select per field, each offering the file's columns; a GET form, so the choice is
/// the URL and a reload or a shared link shows the same preview.
#[component]
fn MappingForm(preview: ImportPreview, full_sync: bool) -> impl IntoView {
    let header = preview.header.clone();
    view! {
        <section aria-label="Columns">
            <h2>"Columns"</h2>
            <form method="get" class="mapping" data-testid="mapping">
                {FIELDS
                    .iter()
                    .map(|(field, _)| {
                        let chosen = preview.mapping.get(field);
                        let problem = preview.mapping_problems.get(*field).cloned();
                        let required = REQUIRED.contains(field);
                        let header = header.clone();
                        view! {
                            <label>
                                {field.replace('_', " ")}
                                {required.then_some(" (required)")}
                                <select name=*field aria-invalid=problem.is_some().then_some("true")>
                                    <option value="" selected=chosen.is_none()>"not in the file"</option>
                                    {header
                                        .into_iter()
                                        .enumerate()
                                        .map(|(column, name)| view! {
                                            <option value=column.to_string() selected=chosen == Some(column)>
                                                {format!("column {}: {name}", column + 1)}
                                            </option>
                                        })
                                        .collect_view()}
                                </select>
                                {problem.map(|problem| view! { <span class="field-error" role="alert">{problem}</span> })}
                            </label>
                        }
                    })
                    .collect_view()}
                <label class="full-row">
                    <input type="checkbox" name=FULL_SYNC value="true" checked=full_sync />
                    "Full sync: retire everyone the file does not name"
                </label>
                <button type="submit" class="secondary full-row">"Preview again"</button>
            </form>
        </section>
    }
}

#[component]
fn FirstRows(header: Vec<String>, rows: Vec<Vec<String>>) -> impl IntoView {
    view! {
        <section aria-label="First rows">
            <h2>"First rows"</h2>
            <div class="table-scroll" tabindex="0">
                <table data-testid="first-rows">
                    <thead>
                        <tr>{header.into_iter().map(|name| view! { <th scope="col">{name}</th> }).collect_view()}</tr>
                    </thead>
                    <tbody>
                        {rows
                            .into_iter()
                            .map(|row| view! {
                                <tr>{row.into_iter().map(|cell| view! { <td>{cell}</td> }).collect_view()}</tr>
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn Counts(preview: ImportPreview, full_sync: bool) -> impl IntoView {
    let counts = preview.counts;
    let retire = full_sync.then(|| format!(", {} to retire (not in the file)", counts.retired));
    view! {
        <p role="status" data-testid="import-counts">
            {format!(
                "{} rows: {} to create, {} to change, {} unchanged{}; {} with problems.",
                preview.rows,
                counts.created,
                counts.changed,
                counts.unchanged,
                retire.unwrap_or_default(),
                preview.problem_count,
            )}
        </p>
    }
}

#[component]
fn Problems(preview: ImportPreview) -> impl IntoView {
    let more = preview
        .problem_count
        .saturating_sub(preview.problems.len() as u64);
    (!preview.problems.is_empty()).then(|| view! {
        <section aria-label="Rows that will not be imported">
            <h2>"Rows that will not be imported"</h2>
            <div class="table-scroll" tabindex="0">
                <table data-testid="problems">
                    <HeaderRow columns=&["Line", "School id", "Why"] />
                    <tbody>
                        {preview
                            .problems
                            .into_iter()
                            .map(|problem| view! {
                                <tr>
                                    <td>{problem.line}</td>
                                    <td>{problem.school_id.unwrap_or_default()}</td>
                                    <td>{problem.message}</td>
                                </tr>
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
            {(more > 0).then(|| view! {
                <p><small>{format!("… and {more} more, in the error report once imported.")}</small></p>
            })}
        </section>
    })
}

/// Import (then the task's page) or discard (then the upload form).
#[component]
fn Confirm(upload_id: Uuid, mapping: ColumnMapping, full_sync: bool, rows: u64) -> impl IntoView {
    let start = ServerAction::<StartPeopleImport>::new();
    let discard = ServerAction::<DiscardImport>::new();
    let navigate = use_navigate();
    let to_task = navigate.clone();
    Effect::new(move |_| {
        if let Some(Ok(task_id)) = start.value().get() {
            to_task(&format!("/tasks/{task_id}"), Default::default());
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(())) = discard.value().get() {
            navigate("/admin/imports", Default::default());
        }
    });
    let error = move || {
        start
            .value()
            .get()
            .and_then(Result::err)
            .or_else(|| discard.value().get().and_then(Result::err))
    };
    let busy = move || start.pending().get() || discard.pending().get();
    view! {
        {move || error().map(|error| view! { <ErrorMessage error /> })}
        <p class="row-actions">
            <button
                type="button"
                disabled=busy
                on:click=move |_| {
                    start.dispatch(StartPeopleImport { upload_id, mapping: mapping.clone(), full_sync });
                }
            >
                {format!("Import {rows} rows")}
            </button>
            <button
                type="button"
                class="secondary"
                disabled=busy
                on:click=move |_| {
                    discard.dispatch(DiscardImport { upload_id });
                }
            >
                "Discard"
            </button>
        </p>
    }
}
