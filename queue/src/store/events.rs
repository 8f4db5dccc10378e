//! The store's in-process signals: waking this process's producers, and the stream of task
//! changes its subscribers read. Shared by every clone of a store.

use tokio::sync::{Mutex, broadcast, watch};
use uuid::Uuid;

use crate::task::{QueueEvent, Task};

/// How many events a slow subscriber may fall behind before it starts missing some (it is
/// told so by `RecvError::Lagged` and can re-read the state from the store).
const EVENT_BUFFER: usize = 4096;

/// Wake-ups for producers and task events for subscribers, in this process.
#[derive(Debug)]
pub(crate) struct EventBus {
    /// Bumped when runnable work may have appeared; producers wait for a change.
    wake: watch::Sender<u64>,
    /// Task changes for subscribers.
    events: broadcast::Sender<QueueEvent>,
    /// Tags this store's PostgreSQL event notifications, so its own listener can drop the
    /// ones it already published locally.
    origin: Uuid,
    /// Bumped when an admin changed a periodic job (run now, pause, resume), so this
    /// node's job loops look again at once instead of after their nap.
    periodic: watch::Sender<u64>,
    /// Whether this store is listed in `queue_watcher` (see `watchers`); held while the
    /// entry is written, so a subscription and a heartbeat never undo each other's.
    watch_entry: Mutex<bool>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self {
            wake: watch::channel(0).0,
            events: broadcast::channel(EVENT_BUFFER).0,
            origin: Uuid::new_v4(),
            periodic: watch::channel(0).0,
            watch_entry: Mutex::new(false),
        }
    }
}

impl EventBus {
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<QueueEvent> {
        self.events.subscribe()
    }

    /// Wakes this process's producers.
    pub(crate) fn wake(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn wake_receiver(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    /// Wakes this process's periodic job loops.
    pub(crate) fn periodic_changed(&self) {
        self.periodic.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn periodic_receiver(&self) -> watch::Receiver<u64> {
        self.periodic.subscribe()
    }

    pub(crate) fn watch_entry(&self) -> &Mutex<bool> {
        &self.watch_entry
    }

    pub(crate) fn origin(&self) -> Uuid {
        self.origin
    }

    /// Whether anyone in this process subscribes to task events: with no one, events need
    /// neither be built nor read from other nodes' changes.
    pub(crate) fn has_subscribers(&self) -> bool {
        self.events.receiver_count() > 0
    }

    /// Announces committed changes to local subscribers.
    pub(crate) fn publish(&self, tasks: &[Task]) {
        if !self.has_subscribers() {
            return;
        }
        for task in tasks {
            // A subscriber gone since the check is not an error.
            let _ = self.events.send(QueueEvent::from(task));
        }
    }

    /// Hands events to local subscribers as they are.
    pub(crate) fn publish_events(&self, events: &[QueueEvent]) {
        for event in events {
            let _ = self.events.send(event.clone());
        }
    }
}
