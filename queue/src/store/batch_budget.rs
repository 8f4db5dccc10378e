//! How many batch transactions a node's tasks may have open at once while people are
//! writing through it.
//!
//! Each open batch keeps a database backend busy. On PostgreSQL, sixteen of them (one per
//! busy worker, two where batches overlap) left a person's query about a seventeenth of the
//! node's cores, and a page took ten times as long as alone. With the budget, the batches
//! beyond it wait for one to commit, and the person's query gets a core. With nobody
//! writing, there is no budget: batches run as the workers allow (ADR 0033). On SQLite the
//! write gate already admits one batch at a time.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The node's budget, shared by its workers' task contexts.
#[derive(Debug, Clone)]
pub(crate) struct BatchBudget {
    /// `None`: no limit.
    places: Option<Arc<Semaphore>>,
}

/// One open batch's place in the budget, given back when the batch's transaction ends.
#[derive(Debug, Default)]
pub struct BatchPlace {
    /// `None` where no budget applies; held only to be dropped with the transaction.
    _permit: Option<OwnedSemaphorePermit>,
}

impl BatchBudget {
    /// A budget of `limit` batches at once; 0 sets no limit.
    pub fn new(limit: usize) -> Self {
        BatchBudget {
            places: (limit > 0).then(|| Arc::new(Semaphore::new(limit))),
        }
    }

    /// A place, once one is free.
    pub async fn wait_for_place(&self) -> BatchPlace {
        match &self.places {
            // The semaphore is never closed, so acquiring only waits.
            Some(places) => BatchPlace {
                _permit: places.clone().acquire_owned().await.ok(),
            },
            None => BatchPlace::default(),
        }
    }

    /// A place if one is free now: for a batch that can as well not start (a second batch
    /// in flight), so that no task waits for a place while holding one.
    pub fn free_place(&self) -> Option<BatchPlace> {
        match &self.places {
            Some(places) => places
                .clone()
                .try_acquire_owned()
                .ok()
                .map(|permit| BatchPlace {
                    _permit: Some(permit),
                }),
            None => Some(BatchPlace::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn batches_beyond_the_budget_wait_for_a_place() {
        let budget = BatchBudget::new(2);
        let first = budget.wait_for_place().await;
        let _second = budget.wait_for_place().await;
        assert!(budget.free_place().is_none(), "the budget is spent");
        let third = tokio::time::timeout(Duration::from_millis(20), budget.wait_for_place());
        assert!(third.await.is_err(), "a third batch waits");
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(1), budget.wait_for_place());
        assert!(third.await.is_ok(), "and starts once one ends");
    }

    #[tokio::test]
    async fn no_limit_always_has_a_place() {
        let budget = BatchBudget::new(0);
        let mut held = Vec::new();
        for _ in 0..64 {
            held.push(budget.wait_for_place().await);
        }
        assert!(budget.free_place().is_some());
    }
}
