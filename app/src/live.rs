//! Live task updates in the browser: an `EventSource` on the server's task stream
//! (`/api/1/task-events`), which the server feeds from the queue's own event stream (across
//! nodes via PostgreSQL LISTEN). The server pushes; the browser never polls.

use leptos::prelude::*;

use crate::api::tasks::TaskUpdate;

/// The server-sent events endpoint.
pub const TASK_EVENTS_PATH: &str = "/api/1/task-events";

/// What the stream says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveMessage {
    /// A task changed.
    Task(TaskUpdate),
    /// The stream (re)connected or fell behind: updates may have been missed, so whatever
    /// the page shows should be fetched again.
    Resync,
}

/// Calls `on_message` for every message of the task stream while the calling component is
/// mounted. Runs only in the browser (it is an effect); on the server it does nothing.
pub fn use_task_stream(on_message: impl Fn(LiveMessage) + Clone + 'static) {
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        browser::connect(on_message.clone());
        #[cfg(not(feature = "hydrate"))]
        let _ = &on_message;
    });
}

/// How often at most a page refetches what task events changed: a drain of thousands of
/// tasks sends thousands of events, and each refetch is a server call.
pub const REFETCH_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A trigger that runs `action` at most once per `every`: the first call schedules it and
/// the calls until it has run are absorbed. Task events can arrive by the thousand during a
/// drain, and a page that refetched on each would make a server call per event.
pub fn coalesced(
    every: std::time::Duration,
    action: impl Fn() + Clone + 'static,
) -> impl Fn() + Clone + 'static {
    let pending = StoredValue::new(false);
    move || {
        if pending.get_value() {
            return;
        }
        pending.set_value(true);
        let action = action.clone();
        set_timeout(
            move || {
                pending.set_value(false);
                action();
            },
            every,
        );
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::{Cell, RefCell};
    use std::rc::{Rc, Weak};
    use std::time::Duration;

    use send_wrapper::SendWrapper;
    use web_sys::wasm_bindgen::JsCast;
    use web_sys::wasm_bindgen::closure::Closure;
    use web_sys::{Event, EventSource, MessageEvent};

    use super::{LiveMessage, TASK_EVENTS_PATH};
    use leptos::prelude::{on_cleanup, set_timeout};

    /// How long to wait before reopening a stream the browser gave up on, by how many times
    /// in a row it did. The browser reconnects by itself when a stream ends or the network
    /// fails, but gives up for good on any answer but 200: a proxy's 502 while the node
    /// behind it restarts, or a 401 once signed out (hence the longer waits).
    const REOPEN_AFTER_SECS: [u64; 5] = [1, 2, 5, 10, 30];

    /// The page's stream across reopenings; closed when its last listener unmounts.
    #[derive(Default)]
    struct Stream {
        open: RefCell<Option<OpenSource>>,
        /// Times in a row the browser gave up; 0 once a connection opens.
        given_up: Cell<usize>,
        ended: Cell<bool>,
    }

    /// An `EventSource` and the callbacks it holds, which must live as long as it does.
    struct OpenSource {
        source: EventSource,
        _callbacks: [Closure<dyn Fn(MessageEvent)>; 3],
        _on_error: Closure<dyn Fn(Event)>,
    }

    /// The page's one stream and everything mounted that listens to it: the top bar's bell
    /// and the page itself share a connection (the server limits streams per user).
    /// Something mounted that listens, by the id it unmounts with.
    type Listener = (u64, Rc<dyn Fn(LiveMessage)>);

    #[derive(Default)]
    struct Hub {
        stream: Rc<Stream>,
        listeners: RefCell<Vec<Listener>>,
        next_id: Cell<u64>,
    }

    thread_local! {
        static HUB: RefCell<Option<Rc<Hub>>> = const { RefCell::new(None) };
    }

    pub fn connect(on_message: impl Fn(LiveMessage) + Clone + 'static) {
        let hub = HUB.with(|hub| {
            hub.borrow_mut()
                .get_or_insert_with(|| {
                    let hub = Rc::new(Hub::default());
                    open(&hub.stream, broadcast(Rc::downgrade(&hub)));
                    hub
                })
                .clone()
        });
        let id = hub.next_id.get();
        hub.next_id.set(id + 1);
        hub.listeners.borrow_mut().push((id, Rc::new(on_message)));
        let held = SendWrapper::new(hub);
        on_cleanup(move || {
            let hub = held.take();
            hub.listeners.borrow_mut().retain(|(other, _)| *other != id);
            if !hub.listeners.borrow().is_empty() {
                return;
            }
            HUB.with(|current| current.borrow_mut().take());
            hub.stream.ended.set(true);
            if let Some(open) = hub.stream.open.borrow_mut().take() {
                open.source.close();
            }
        });
    }

    /// Hands each message to every listener of `hub` (a copy of the list, so a listener may
    /// mount or unmount others while it runs).
    fn broadcast(hub: Weak<Hub>) -> impl Fn(LiveMessage) + Clone + 'static {
        move |message| {
            let Some(hub) = hub.upgrade() else {
                return;
            };
            let listeners: Vec<_> = hub
                .listeners
                .borrow()
                .iter()
                .map(|(_, l)| l.clone())
                .collect();
            for listener in listeners {
                listener(message.clone());
            }
        }
    }

    /// Opens the stream anew, replacing (and closing) the one the browser gave up on.
    fn open(stream: &Rc<Stream>, on_message: impl Fn(LiveMessage) + Clone + 'static) {
        if let Some(old) = stream.open.borrow_mut().take() {
            old.source.close();
        }
        if stream.ended.get() {
            return;
        }
        let Ok(source) = EventSource::new(TASK_EVENTS_PATH) else {
            leptos::logging::error!("cannot open the live task stream");
            return;
        };
        let on_task = {
            let on_message = on_message.clone();
            Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
                let Some(data) = event.data().as_string() else {
                    return;
                };
                match serde_json::from_str(&data) {
                    Ok(update) => on_message(LiveMessage::Task(update)),
                    Err(error) => leptos::logging::error!("unreadable task update: {error}"),
                }
            })
        };
        // `open` fires on every (re)connection: anything sent while disconnected was missed.
        let on_open = {
            let (on_message, stream) = (on_message.clone(), Rc::downgrade(stream));
            Closure::<dyn Fn(MessageEvent)>::new(move |_| {
                if let Some(stream) = stream.upgrade() {
                    stream.given_up.set(0);
                }
                on_message(LiveMessage::Resync)
            })
        };
        let on_resync = {
            let on_message = on_message.clone();
            Closure::<dyn Fn(MessageEvent)>::new(move |_| on_message(LiveMessage::Resync))
        };
        let on_error = {
            let (source, stream) = (source.clone(), Rc::downgrade(stream));
            Closure::<dyn Fn(Event)>::new(move |_| {
                let Some(stream) = stream.upgrade() else {
                    return;
                };
                if source.ready_state() != EventSource::CLOSED {
                    return; // the browser is reconnecting by itself
                }
                let times = stream.given_up.get();
                stream.given_up.set(times + 1);
                let wait = REOPEN_AFTER_SECS[times.min(REOPEN_AFTER_SECS.len() - 1)];
                let (stream, on_message) = (SendWrapper::new(stream), on_message.clone());
                // Later, not here: reopening drops this very callback.
                set_timeout(
                    move || open(&stream.take(), on_message),
                    Duration::from_secs(wait),
                );
            })
        };
        let _ = source.add_event_listener_with_callback("task", on_task.as_ref().unchecked_ref());
        let _ =
            source.add_event_listener_with_callback("resync", on_resync.as_ref().unchecked_ref());
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        *stream.open.borrow_mut() = Some(OpenSource {
            source,
            _callbacks: [on_task, on_open, on_resync],
            _on_error: on_error,
        });
    }
}
