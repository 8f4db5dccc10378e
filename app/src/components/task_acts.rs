//! The bar under a list of tasks that acts on the ticked rows or on every task the list's
//! filters match: Cancel, Retry, Requeue now, Abandon (with a reason), and what the act did.
//! The explorer and Queue health's failed list both use it.

use std::collections::HashSet;

use bulkq_types::task::{ActRequest, TaskAct, TaskSelection};
use leptos::prelude::*;
use uuid::Uuid;

use crate::api::tasks::ActOnTasks;
use crate::format;

/// Which tasks the bar acts on, and how a person reads that: `3 tasks`, `all 12 matching`.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub selection: TaskSelection,
    pub words: String,
}

/// A list's tick boxes: the rows ticked, or "all matching" ticked.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    pub selected: RwSignal<HashSet<Uuid>>,
    pub all_matching: RwSignal<bool>,
}

impl Default for Ticks {
    fn default() -> Self {
        Ticks {
            selected: RwSignal::new(HashSet::new()),
            all_matching: RwSignal::new(false),
        }
    }
}

impl Ticks {
    /// Ticks a page keeps across refetches of its list (a busy queue refetches it every
    /// second), cleared when `list` names another list (other filters, another page) and
    /// after each act, so a finished act leaves nothing ticked to press again by mistake.
    pub fn kept_by_page(list: impl Fn() + 'static, acting: Acting) -> Self {
        let ticks = Ticks::default();
        Effect::new(move |_| {
            list();
            acting.action.version().track();
            ticks.clear();
        });
        ticks
    }

    /// Unticks everything.
    pub fn clear(self) {
        self.all_matching.set(false);
        self.selected.set(HashSet::new());
    }

    /// What the ticks choose: every task of `matching` (read as `all {matching_words}
    /// matching`) when that box is ticked, else the ticked rows of those `shown` (a row a
    /// refetch took away is not acted on unseen), else nothing.
    pub fn chosen(
        self,
        matching: TaskSelection,
        matching_words: String,
        shown: Vec<Uuid>,
    ) -> ArcSignal<Option<Chosen>> {
        ArcSignal::derive(move || {
            if self.all_matching.get() {
                return Some(Chosen {
                    selection: matching.clone(),
                    words: format!("all {matching_words} matching"),
                });
            }
            let ids: Vec<Uuid> = self
                .selected
                .with(|s| shown.iter().copied().filter(|id| s.contains(id)).collect());
            (!ids.is_empty()).then(|| Chosen {
                words: format::plural(ids.len() as u64, "task", "tasks"),
                selection: TaskSelection::Ids(ids),
            })
        })
    }

    /// Ticks (or unticks) every row in `shown`, the rows on the page.
    pub fn tick_page(self, shown: &[Uuid], on: bool) {
        self.selected.set(if on {
            shown.iter().copied().collect()
        } else {
            HashSet::new()
        });
    }

    /// Whether the "tick this page" box shows ticked: every row in `shown` is.
    pub fn is_page_ticked(self, shown: &[Uuid]) -> bool {
        !shown.is_empty()
            && self
                .selected
                .with(|s| shown.iter().all(|id| s.contains(id)))
    }

    /// Whether `id`'s box shows ticked.
    pub fn is_ticked(self, id: Uuid) -> bool {
        self.all_matching.get() || self.selected.with(|s| s.contains(&id))
    }

    /// Ticks or unticks one row.
    pub fn tick(self, id: Uuid, on: bool) {
        self.selected.update(|s| {
            if on {
                s.insert(id);
            } else {
                s.remove(&id);
            }
        });
    }
}

/// The act a list's bar dispatches and the last one pressed: kept by the page, above the
/// list the act makes it reload, so what the act did stays in view.
#[derive(Clone, Copy)]
pub struct Acting {
    pub action: ServerAction<ActOnTasks>,
    pub last: RwSignal<Option<TaskAct>>,
}

impl Acting {
    /// Dispatches `act` on `selection` and remembers it for [`ActResult`].
    pub fn dispatch(self, act: TaskAct, selection: TaskSelection, reason: String) {
        self.last.set(Some(act));
        self.action.dispatch(ActOnTasks {
            request: ActRequest {
                act,
                selection,
                reason,
            },
        });
    }
}

impl Default for Acting {
    fn default() -> Self {
        Acting {
            action: ServerAction::new(),
            last: RwSignal::new(None),
        }
    }
}

/// Renders a button per act in `acts`, each naming what it applies to; nothing can be
/// pressed while nothing is chosen.
#[component]
pub fn ActBar(
    acting: Acting,
    acts: Vec<TaskAct>,
    chosen: ArcSignal<Option<Chosen>>,
) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    let buttons = acts
        .into_iter()
        .map(|offered| {
            let class = match offered {
                TaskAct::Cancel | TaskAct::Abandon => "danger",
                TaskAct::Retry | TaskAct::Requeue => "",
            };
            let reason_field = (offered == TaskAct::Abandon).then(|| {
                view! {
                    <label for="act-reason">"Reason"</label>
                    <input id="act-reason" type="text" maxlength="500" bind:value=reason />
                }
            });
            // Each closure holds the choice itself: a page's ticks outlive a refetched list,
            // and the bar of the list being replaced must not read a choice already dropped.
            let nothing_chosen = {
                let chosen = chosen.clone();
                move || chosen.with(Option::is_none)
            };
            let label = {
                let chosen = chosen.clone();
                move || match chosen.with(|c| c.as_ref().map(|c| c.words.clone())) {
                    Some(words) => format!("{} {words}", offered.label()),
                    None => offered.label().to_owned(),
                }
            };
            let press = {
                let chosen = chosen.clone();
                move |_| {
                    if let Some(chosen) = chosen.get_untracked() {
                        acting.dispatch(offered, chosen.selection, reason.get_untracked());
                    }
                }
            };
            view! {
                {reason_field}
                <button
                    type="button"
                    class=class
                    data-act=offered.as_str()
                    on:click=press
                    disabled=nothing_chosen
                >
                    {label}
                </button>
            }
        })
        .collect_view();
    view! { <div class="repair" role="group" aria-label="Act on tasks">{buttons}</div> }
}

/// What the last act did: "Retried 3 tasks (0 skipped)." or its error.
#[component]
pub fn ActResult(acting: Acting) -> impl IntoView {
    let result = move || {
        let outcome = acting.action.value().get()?;
        let pressed = acting.last.get()?;
        Some(match outcome {
            Ok(done) => format!(
                "{} ({} skipped).",
                pressed.done_words(done.changed as u64),
                done.skipped
            ),
            Err(error) => error.to_string(),
        })
    };
    move || result().map(|text| view! { <p role="status" data-testid="repair-result">{text}</p> })
}
