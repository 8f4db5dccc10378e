//! The forms of the bulk actions that ask for something: export (columns), change status
//! (status and reason), reassign coach (the coach), early alert (course, reasons,
//! suggestion, comment) and email (subject, message, cc). Watch and unwatch need nothing
//! and go straight to their confirmation ([`has_form`]). Each form fills in the JSON API's
//! own request for its action, which its confirmation asks about ([`question`]).
//!
//! What a form holds lives in [`Drafts`], outside the form, so going back from the
//! confirmation (or from an error) finds everything as it was typed.

use bulkq_types::actions::ActionKind;
use bulkq_types::alerts::{AlertContent, MAX_COURSE_LEN, MAX_NOTE_LEN};
use bulkq_types::export::{ALL_COLUMNS, ExportColumn};
use bulkq_types::requests::{
    ActionRequest, CoachReassignmentRequest, EarlyAlertRequest, EmailRequest, ExportRequest,
    ScheduleRequest, StatusChangeRequest, WatchRequest,
};
use leptos::ev::SubmitEvent;
use leptos::html;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys;

use crate::api::alerts::alert_reasons;
use crate::api::bulk::PRIORITIES;
use crate::api::caseload::{ProgramStatusOption, list_coaches};
use crate::{format, local_time};

/// Whether `kind` asks for anything before its confirmation.
pub fn has_form(kind: ActionKind) -> bool {
    match kind {
        ActionKind::Export
        | ActionKind::ProgramStatusChange
        | ActionKind::CoachReassignment
        | ActionKind::EarlyAlert
        | ActionKind::Email => true,
        ActionKind::Watch | ActionKind::Unwatch => false,
    }
}

/// What the forms hold while they are filled in.
#[derive(Clone, Copy)]
pub struct Drafts {
    /// Export columns, as chosen (kept in [`ALL_COLUMNS`] order when sent).
    columns: RwSignal<Vec<ExportColumn>>,
    to_status: RwSignal<String>,
    reason: RwSignal<String>,
    /// The new coach's username.
    to_coach: RwSignal<String>,
    /// The early alert's course or term, reason codes, suggestion and comment.
    course: RwSignal<String>,
    reasons: RwSignal<Vec<String>>,
    suggestion: RwSignal<String>,
    comment: RwSignal<String>,
    subject: RwSignal<String>,
    body: RwSignal<String>,
    /// Cc addresses as typed: separated by commas, spaces or new lines.
    cc: RwSignal<String>,
    /// The start time as the `datetime-local` input holds it (local time); empty for now.
    start_at: RwSignal<String>,
    priority: RwSignal<i32>,
}

impl Drafts {
    pub fn new() -> Self {
        Drafts {
            columns: RwSignal::new(ALL_COLUMNS.to_vec()),
            to_status: RwSignal::default(),
            reason: RwSignal::default(),
            to_coach: RwSignal::default(),
            course: RwSignal::default(),
            reasons: RwSignal::default(),
            suggestion: RwSignal::default(),
            comment: RwSignal::default(),
            subject: RwSignal::default(),
            body: RwSignal::default(),
            cc: RwSignal::default(),
            start_at: RwSignal::default(),
            priority: RwSignal::default(),
        }
    }

    /// When the action should run, in UTC, and how urgently.
    pub fn schedule(&self) -> ScheduleRequest {
        ScheduleRequest {
            run_at: local_time::from_local_input(&self.start_at.get_untracked()),
            priority: Some(self.priority.get_untracked()),
        }
    }

    /// The request the form of `kind` describes now, before a target and a schedule are
    /// put in ([`ActionRequest::with`]).
    pub fn request(&self, kind: ActionKind) -> ActionRequest {
        match kind {
            ActionKind::Export => {
                let chosen = self.columns.get_untracked();
                ActionRequest::Export(ExportRequest {
                    columns: Some(
                        ALL_COLUMNS
                            .into_iter()
                            .filter(|column| chosen.contains(column))
                            .collect(),
                    ),
                    ..ExportRequest::default()
                })
            }
            ActionKind::ProgramStatusChange => {
                ActionRequest::ProgramStatusChange(StatusChangeRequest {
                    to_status: self.to_status.get_untracked(),
                    reason: self.reason.get_untracked(),
                    ..StatusChangeRequest::default()
                })
            }
            ActionKind::CoachReassignment => {
                ActionRequest::CoachReassignment(CoachReassignmentRequest {
                    to_coach: self.to_coach.get_untracked(),
                    ..CoachReassignmentRequest::default()
                })
            }
            ActionKind::EarlyAlert => ActionRequest::EarlyAlert(EarlyAlertRequest {
                alert: AlertContent {
                    course: self.course.get_untracked(),
                    reasons: self.reasons.get_untracked(),
                    suggestion: self.suggestion.get_untracked(),
                    comment: self.comment.get_untracked(),
                },
                ..EarlyAlertRequest::default()
            }),
            ActionKind::Watch => ActionRequest::Watch(WatchRequest::default()),
            ActionKind::Unwatch => ActionRequest::Unwatch(WatchRequest::default()),
            ActionKind::Email => ActionRequest::Email(EmailRequest {
                subject: self.subject.get_untracked(),
                body: self.body.get_untracked(),
                cc: split_addresses(&self.cc.get_untracked()),
                ..EmailRequest::default()
            }),
        }
    }
}

/// The confirmation question, e.g. "Change the status of 3 people to Inactive?".
pub fn question(request: &ActionRequest, people: u64, statuses: &[ProgramStatusOption]) -> String {
    let people = format::plural(people, "person", "people");
    match request {
        ActionRequest::Export(export) => format!(
            "Export {people} to CSV ({})?",
            format::plural(
                export.columns.as_ref().map_or(0, Vec::len) as u64,
                "column",
                "columns"
            )
        ),
        ActionRequest::ProgramStatusChange(change) => {
            let to_status = &change.to_status;
            let name = statuses
                .iter()
                .find(|s| s.code == *to_status)
                .map_or(to_status.as_str(), |s| s.name.as_str());
            format!("Change the status of {people} to {name}?")
        }
        ActionRequest::Watch(_) => format!("Watch {people}?"),
        ActionRequest::Unwatch(_) => format!("Stop watching {people}?"),
        ActionRequest::Email(email) => {
            format!("Email {people} with the subject “{}”?", email.subject)
        }
        ActionRequest::CoachReassignment(move_to) => {
            format!("Move {people} to the coach {}?", move_to.to_coach)
        }
        ActionRequest::EarlyAlert(alert) => format!(
            "Raise an early alert for {people} in “{}” and tell their coaches?",
            alert.alert.course.trim()
        ),
    }
}

/// `"a@x.edu, b@x.edu\nc@x.edu"` → three addresses; empty pieces are dropped.
fn split_addresses(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|piece| !piece.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The form of `kind` (one that [`has_form`]), bound to `drafts`; `on_continue` gets the
/// filled-in request and its schedule once the browser's own checks (required fields,
/// lengths) pass.
#[component]
pub fn BulkForm(
    kind: ActionKind,
    drafts: Drafts,
    statuses: StoredValue<Vec<ProgramStatusOption>>,
    on_continue: Callback<(ActionRequest, ScheduleRequest)>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let first_field = NodeRef::<html::Div>::new();
    // Keyboard users land in the form they opened.
    Effect::new(move |_| {
        if let Some(fields) = first_field.get()
            && let Ok(Some(input)) = fields.query_selector("input, select, textarea")
            && let Ok(input) = input.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = input.focus();
        }
    });
    let on_submit = move |ev: SubmitEvent| {
        ev.prevent_default();
        on_continue.run((drafts.request(kind), drafts.schedule()));
    };
    let (title, fields) = match kind {
        ActionKind::Export => ("Export to CSV", export_fields(drafts).into_any()),
        ActionKind::ProgramStatusChange => {
            ("Change status", status_fields(drafts, statuses).into_any())
        }
        ActionKind::Email => ("Send email", email_fields(drafts).into_any()),
        ActionKind::CoachReassignment => ("Reassign coach", coach_fields(drafts).into_any()),
        ActionKind::EarlyAlert => ("Raise an early alert", alert_fields(drafts).into_any()),
        ActionKind::Watch | ActionKind::Unwatch => (kind.label(), ().into_any()),
    };
    view! {
        <form class="bulk-form" on:submit=on_submit aria-label=title>
            <h2>{title}</h2>
            <div class="fields" node_ref=first_field>{fields}</div>
            {schedule_fields(drafts, kind)}
            <div class="form-buttons">
                <button type="submit">"Continue"</button>
                <button type="button" class="secondary" on:click=move |_| on_cancel.run(())>
                    "Cancel"
                </button>
            </div>
        </form>
    }
}

fn export_fields(drafts: Drafts) -> impl IntoView {
    view! {
        <fieldset>
            <legend>"Columns"</legend>
            {ALL_COLUMNS
                .into_iter()
                .map(|column| {
                    let checked = move || drafts.columns.with(|chosen| chosen.contains(&column));
                    view! {
                        <label class="check">
                            <input
                                type="checkbox"
                                name="columns"
                                value=column.header()
                                prop:checked=checked
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    drafts.columns.update(|chosen| {
                                        chosen.retain(|c| *c != column);
                                        if on {
                                            chosen.push(column);
                                        }
                                    });
                                }
                            />
                            {column.label()}
                        </label>
                    }
                })
                .collect_view()}
        </fieldset>
    }
}

fn status_fields(drafts: Drafts, statuses: StoredValue<Vec<ProgramStatusOption>>) -> impl IntoView {
    view! {
        <label for="bulk-status">"New status"</label>
        <select
            id="bulk-status"
            required
            prop:value=move || drafts.to_status.get()
            on:change=move |ev| drafts.to_status.set(event_target_value(&ev))
        >
            <option value="">"Choose a status"</option>
            {statuses
                .get_value()
                .into_iter()
                .map(|s| {
                    let code = s.code.clone();
                    view! {
                        <option value=s.code selected=move || drafts.to_status.get() == code>
                            {s.name}
                        </option>
                    }
                })
                .collect_view()}
        </select>
        <label for="bulk-reason">"Reason"</label>
        <textarea id="bulk-reason" required maxlength="1000" rows="2" bind:value=drafts.reason></textarea>
    }
}

/// The new coach, from the enabled accounts.
fn coach_fields(drafts: Drafts) -> impl IntoView {
    let coaches = Resource::new(|| (), |_| list_coaches());
    view! {
        <label for="bulk-coach">"New coach"</label>
        <select
            id="bulk-coach"
            required
            prop:value=move || drafts.to_coach.get()
            on:change=move |ev| drafts.to_coach.set(event_target_value(&ev))
        >
            <option value="">"Choose a coach"</option>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    coaches
                        .await
                        .unwrap_or_default()
                        .into_iter()
                        .map(|coach| {
                            let username = coach.username.clone();
                            view! {
                                <option value=coach.username selected=move || drafts.to_coach.get() == username>
                                    {coach.display_name}
                                </option>
                            }
                        })
                        .collect_view()
                })}
            </Transition>
        </select>
    }
}

/// The alert's course, its reasons (from the list admins keep), a suggestion and a comment.
fn alert_fields(drafts: Drafts) -> impl IntoView {
    let reasons = Resource::new(|| (), |_| alert_reasons(false));
    view! {
        <label for="bulk-course">"Course or term"</label>
        <input
            id="bulk-course"
            type="text"
            required
            maxlength=MAX_COURSE_LEN.to_string()
            bind:value=drafts.course
        />
        <fieldset>
            <legend>"Reasons (one or more)"</legend>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    reasons
                        .await
                        .unwrap_or_default()
                        .into_iter()
                        .map(|reason| {
                            let code = reason.code.clone();
                            let checked = {
                                let code = code.clone();
                                move || drafts.reasons.with(|chosen| chosen.contains(&code))
                            };
                            view! {
                                <label class="check">
                                    <input
                                        type="checkbox"
                                        name="reasons"
                                        value=reason.code
                                        prop:checked=checked
                                        on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            drafts.reasons.update(|chosen| {
                                                chosen.retain(|c| *c != code);
                                                if on {
                                                    chosen.push(code.clone());
                                                }
                                            });
                                        }
                                    />
                                    {reason.name}
                                </label>
                            }
                        })
                        .collect_view()
                })}
            </Transition>
        </fieldset>
        <label for="bulk-suggestion">"Suggestion (optional)"</label>
        <textarea
            id="bulk-suggestion"
            rows="2"
            maxlength=MAX_NOTE_LEN.to_string()
            bind:value=drafts.suggestion
        ></textarea>
        <label for="bulk-comment">"Comment (optional)"</label>
        <textarea
            id="bulk-comment"
            rows="2"
            maxlength=MAX_NOTE_LEN.to_string()
            bind:value=drafts.comment
        ></textarea>
    }
}

fn email_fields(drafts: Drafts) -> impl IntoView {
    view! {
        <label for="bulk-subject">"Subject"</label>
        <input id="bulk-subject" type="text" required maxlength="200" bind:value=drafts.subject />
        <label for="bulk-body">"Message"</label>
        <textarea id="bulk-body" required rows="6" bind:value=drafts.body></textarea>
        <label for="bulk-cc">"Cc (optional)"</label>
        <input
            id="bulk-cc"
            type="text"
            inputmode="email"
            aria-describedby="bulk-cc-hint"
            bind:value=drafts.cc
        />
        <p class="hint" id="bulk-cc-hint">"Addresses separated by commas; copied on every message."</p>
    }
}

/// When the action starts (local time, empty for now) and its priority.
fn schedule_fields(drafts: Drafts, kind: ActionKind) -> impl IntoView {
    let start_label = match kind {
        ActionKind::Email => "Send at (optional)",
        ActionKind::Export
        | ActionKind::ProgramStatusChange
        | ActionKind::CoachReassignment
        | ActionKind::EarlyAlert
        | ActionKind::Watch
        | ActionKind::Unwatch => "Start at (optional)",
    };
    view! {
        <fieldset class="schedule">
            <legend>"When"</legend>
            <label for="bulk-start-at">{start_label}</label>
            <input
                id="bulk-start-at"
                type="datetime-local"
                aria-describedby="bulk-start-at-hint"
                bind:value=drafts.start_at
            />
            <p class="hint" id="bulk-start-at-hint">"Your local time; leave empty to start now."</p>
            <label for="bulk-priority">"Priority"</label>
            <select
                id="bulk-priority"
                on:change=move |ev| {
                    drafts.priority.set(event_target_value(&ev).parse().unwrap_or_default())
                }
            >
                {PRIORITIES
                    .iter()
                    .map(|(value, label)| {
                        let value = *value;
                        view! {
                            <option value=value.to_string() selected=move || drafts.priority.get() == value>
                                {*label}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
        </fieldset>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_names_the_action_the_count_and_the_change() {
        let statuses = [ProgramStatusOption {
            code: "INACTIVE".into(),
            name: "Inactive".into(),
        }];
        let change = ActionRequest::ProgramStatusChange(StatusChangeRequest {
            to_status: "INACTIVE".into(),
            reason: "moved away".into(),
            ..StatusChangeRequest::default()
        });
        assert_eq!(
            question(&change, 3, &statuses),
            "Change the status of 3 people to Inactive?"
        );
        let watch = ActionRequest::Watch(WatchRequest::default());
        assert_eq!(question(&watch, 1, &statuses), "Watch 1 person?");
        let unwatch = ActionRequest::Unwatch(WatchRequest::default());
        assert_eq!(
            question(&unwatch, 2500, &statuses),
            "Stop watching 2,500 people?"
        );
        let export = ActionRequest::Export(ExportRequest {
            columns: Some(vec![ExportColumn::Id, ExportColumn::Email]),
            ..ExportRequest::default()
        });
        assert_eq!(
            question(&export, 40, &statuses),
            "Export 40 people to CSV (2 columns)?"
        );
    }

    #[test]
    fn cc_addresses_may_be_separated_any_usual_way() {
        assert_eq!(
            split_addresses(" a@x.edu, b@x.edu;c@x.edu\nd@x.edu ,"),
            ["a@x.edu", "b@x.edu", "c@x.edu", "d@x.edu"]
        );
        assert!(split_addresses("  ").is_empty());
    }

    #[test]
    fn export_columns_keep_their_natural_order() {
        // Signals live in an owner's arena (the server build keeps one per request).
        Owner::new().with(|| {
            let drafts = Drafts::new();
            drafts
                .columns
                .set(vec![ExportColumn::Email, ExportColumn::SchoolId]);
            let ActionRequest::Export(export) = drafts.request(ActionKind::Export) else {
                panic!("an export form makes an export request");
            };
            assert_eq!(
                export.columns,
                Some(vec![ExportColumn::SchoolId, ExportColumn::Email])
            );
        });
    }
}
