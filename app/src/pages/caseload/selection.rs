//! Which people of one results page are selected for a bulk action: some ticked by hand,
//! or everyone the search matches. A new search or page starts a new selection, so what the
//! bar counts is always what the user can see ticked.

use std::collections::HashSet;

use leptos::prelude::*;
use uuid::Uuid;

use bulkq_types::filter::PersonFilter;
use bulkq_types::requests::TargetRequest;

/// The selection on one results page; cheap to copy into every checkbox's handler.
#[derive(Clone, Copy)]
pub struct Selection {
    /// The people on the page, in table order (the order a target lists them in).
    page: StoredValue<Vec<Uuid>>,
    ticked: RwSignal<HashSet<Uuid>>,
    /// Everyone matching the search, on this page and beyond.
    all_matching: RwSignal<bool>,
}

impl Selection {
    pub fn new(page: Vec<Uuid>) -> Self {
        Selection {
            page: StoredValue::new(page),
            ticked: RwSignal::new(HashSet::new()),
            all_matching: RwSignal::new(false),
        }
    }

    pub fn is_selected(&self, id: Uuid) -> bool {
        self.all_matching.get() || self.ticked.with(|ticked| ticked.contains(&id))
    }

    /// Ticks or unticks one person. Unticking someone while all matching are selected
    /// leaves the rest of this page ticked: the whole search minus one cannot be sent as a
    /// search.
    pub fn set(&self, id: Uuid, on: bool) {
        if self.all_matching.get_untracked() {
            self.all_matching.set(false);
            self.ticked.set(self.page.get_value().into_iter().collect());
        }
        self.ticked.update(|ticked| {
            if on {
                ticked.insert(id);
            } else {
                ticked.remove(&id);
            }
        });
    }

    /// Ticks or unticks everyone on the page.
    pub fn set_page(&self, on: bool) {
        self.all_matching.set(false);
        self.ticked.set(if on {
            self.page.get_value().into_iter().collect()
        } else {
            HashSet::new()
        });
    }

    /// Whether everyone on the page is selected (so "select all matching" makes sense).
    pub fn is_page_selected(&self) -> bool {
        self.all_matching.get()
            || self.page.with_value(|page| {
                !page.is_empty() && self.ticked.with(|ticked| ticked.len() == page.len())
            })
    }

    pub fn select_all_matching(&self) {
        self.all_matching.set(true);
    }

    pub fn is_all_matching(&self) -> bool {
        self.all_matching.get()
    }

    /// How many are ticked by hand (meaningless while all matching are selected).
    pub fn ticked_count(&self) -> usize {
        self.ticked.with(HashSet::len)
    }

    pub fn is_empty(&self) -> bool {
        !self.all_matching.get() && self.ticked.with(HashSet::is_empty)
    }

    pub fn clear(&self) {
        self.set_page(false);
    }

    /// The target a bulk action over this selection gets (`search` is the filter the page's
    /// search ran), or `None` when nothing is selected. Everyone matching is sent as the
    /// search, never as ids, and evaluated when the task runs.
    pub fn target(&self, search: &PersonFilter) -> Option<TargetRequest> {
        if self.all_matching.get_untracked() {
            return Some(TargetRequest {
                query: Some(search.clone()),
                ..TargetRequest::default()
            });
        }
        let ids: Vec<Uuid> = self.ticked.with_untracked(|ticked| {
            self.page
                .get_value()
                .into_iter()
                .filter(|id| ticked.contains(id))
                .collect()
        });
        (!ids.is_empty()).then_some(TargetRequest {
            ids: Some(ids),
            ..TargetRequest::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Vec<Uuid> {
        (1..=3).map(Uuid::from_u128).collect()
    }

    fn people(ids: Vec<Uuid>) -> Option<TargetRequest> {
        Some(TargetRequest {
            ids: Some(ids),
            ..TargetRequest::default()
        })
    }

    // Signals live in an owner's arena (the server build keeps one per request), hence
    // `Owner::new().with`.

    #[test]
    fn ticked_people_are_sent_in_table_order() {
        Owner::new().with(|| {
            let page = page();
            let selection = Selection::new(page.clone());
            assert_eq!(selection.target(&PersonFilter::default()), None);
            selection.set(page[2], true);
            selection.set(page[0], true);
            assert!(!selection.is_page_selected());
            assert_eq!(
                selection.target(&PersonFilter::default()),
                people(vec![page[0], page[2]])
            );
        });
    }

    #[test]
    fn all_matching_is_sent_as_the_search() {
        Owner::new().with(|| {
            let page = page();
            let selection = Selection::new(page.clone());
            selection.set_page(true);
            assert!(selection.is_page_selected());
            selection.select_all_matching();
            let search = PersonFilter {
                program_status: Some("ACTIVE".into()),
                coach_id: Some(Uuid::from_u128(9)),
                ..PersonFilter::default()
            };
            assert_eq!(
                selection.target(&search),
                Some(TargetRequest {
                    query: Some(search.clone()),
                    ..TargetRequest::default()
                })
            );
            // Unticking one person falls back to the rest of the page.
            selection.set(page[1], false);
            assert!(!selection.is_all_matching());
            assert_eq!(selection.target(&search), people(vec![page[0], page[2]]));
            selection.clear();
            assert!(selection.is_empty());
        });
    }
}
