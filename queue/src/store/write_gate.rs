//! SQLite's single writer, shared by the writers of one process in two classes: work for a
//! person waiting on a page (a sign-in, a submission, an admin's repair) goes ahead of the
//! background (batches, claims, completions, upkeep), so a person waits for at most the
//! write in progress, never for the queue of batches behind it.
//!
//! Within a class it is first come, first served. The background waits while people write,
//! but after [`PEOPLE_FIRST_LIMIT`] of people's writes in a row it gets one turn: an office
//! submitting back to back once kept every batch, claim and completion waiting, and the
//! queue did nothing at all.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Who is waiting for the write slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteClass {
    /// A person is waiting for the answer: served first, and a sign that people are writing
    /// (`Store::people_writing`), so bulk work keeps its batches short for a while.
    Interactive,
    /// A person hands the queue bulk work (a bulk action, an import): served first, like
    /// `Interactive`, but a sign that people are writing for seconds only
    /// (`SUBMISSION_WRITING_WINDOW`). Taken as a person's write, the work just asked for ran
    /// its first 30 s in short batches for nobody's sake; taken as none, an office's
    /// submissions each waited for a whole batch (ADR 0033).
    Submission,
    /// Queue work nobody watches as it happens.
    Background,
}

#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    state: Mutex<GateState>,
}

/// How long people's writes may go ahead of waiting background work in a row before the
/// background gets one turn (ADR 0031). About one batch (ADR 0033): under an unbroken stream
/// of people's writes the background still gets about half the writer, and a person waits at
/// most for one batch besides the people ahead.
pub(crate) const PEOPLE_FIRST_LIMIT: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
struct GateState {
    held: bool,
    interactive: VecDeque<oneshot::Sender<()>>,
    background: VecDeque<oneshot::Sender<()>>,
    /// Since when people have gone ahead of waiting background work without a break.
    people_first_since: Option<Instant>,
}

/// The write slot, held until dropped; then it passes to the next waiter.
#[derive(Debug)]
pub struct WritePass {
    gate: Arc<WriteGate>,
}

impl Drop for WritePass {
    fn drop(&mut self) {
        self.gate.hand_on();
    }
}

impl WriteGate {
    /// Waits for the slot. Cancel-safe: a waiter dropped while the slot is being handed to it
    /// passes it on.
    pub(crate) async fn enter(self: &Arc<Self>, class: WriteClass) -> WritePass {
        let receiver = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if !state.held {
                state.held = true;
                return WritePass { gate: self.clone() };
            }
            let (sender, receiver) = oneshot::channel();
            match class {
                WriteClass::Interactive | WriteClass::Submission => {
                    state.interactive.push_back(sender)
                }
                WriteClass::Background => state.background.push_back(sender),
            }
            receiver
        };
        let mut waiting = Waiting {
            receiver,
            gate: self.clone(),
            done: false,
        };
        // `hand_on` only drops a sender after sending on it, so this never fails.
        let _ = (&mut waiting.receiver).await;
        waiting.done = true;
        WritePass { gate: self.clone() }
    }

    /// Gives the slot to the next waiter (people first, unless they have gone first for
    /// [`PEOPLE_FIRST_LIMIT`] while the background waited), or frees it.
    fn hand_on(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if state.background.is_empty() {
                state.people_first_since = None;
            }
            let background_turn = state
                .people_first_since
                .is_some_and(|since| since.elapsed() >= PEOPLE_FIRST_LIMIT);
            let next = match (background_turn, state.interactive.is_empty()) {
                (false, false) => {
                    if !state.background.is_empty() {
                        state.people_first_since.get_or_insert_with(Instant::now);
                    }
                    state.interactive.pop_front()
                }
                _ => {
                    state.people_first_since = None;
                    state
                        .background
                        .pop_front()
                        .or_else(|| state.interactive.pop_front())
                }
            };
            let Some(next) = next else {
                state.held = false;
                return;
            };
            // A waiter that gave up (timed out) is skipped.
            if next.send(()).is_ok() {
                return;
            }
        }
    }
}

/// A waiter's receiving end; if the wait is abandoned after the slot was handed over, the
/// slot is passed on instead of being lost.
struct Waiting {
    receiver: oneshot::Receiver<()>,
    gate: Arc<WriteGate>,
    done: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.receiver.close();
        if self.receiver.try_recv().is_ok() {
            self.gate.hand_on();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Queues `writers` in order, `spacing` apart, behind the slot `held` holds; then frees
    /// it and returns the order they got the slot in, each holding it for `hold`.
    async fn order_of_writes(
        gate: &Arc<WriteGate>,
        held: WritePass,
        writers: impl IntoIterator<Item = (&'static str, WriteClass)>,
        spacing: Duration,
        hold: Duration,
    ) -> Vec<&'static str> {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for (name, class) in writers {
            let (gate, order) = (gate.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let _pass = gate.enter(class).await;
                order.lock().unwrap().push(name);
                tokio::time::sleep(hold).await;
            }));
            tokio::time::sleep(spacing).await;
        }
        drop(held);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        order.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn people_go_ahead_of_waiting_background_work() {
        let gate = Arc::new(WriteGate::default());
        let held = gate.enter(WriteClass::Background).await;
        let writers = [
            ("batch 1", WriteClass::Background),
            ("batch 2", WriteClass::Background),
            ("sign-in", WriteClass::Interactive),
            ("batch 3", WriteClass::Background),
            ("submit", WriteClass::Submission),
        ];
        // Queued in this order.
        let spacing = Duration::from_millis(10);
        let order = order_of_writes(&gate, held, writers, spacing, Duration::ZERO).await;
        assert_eq!(
            order,
            ["sign-in", "submit", "batch 1", "batch 2", "batch 3"]
        );
    }

    #[tokio::test]
    async fn background_gets_a_turn_after_people_went_first_for_the_limit() {
        let gate = Arc::new(WriteGate::default());
        let held = gate.enter(WriteClass::Interactive).await;
        // Six people's writes of 30 ms each, queued behind one batch: 180 ms in all.
        let writers = std::iter::once(("batch", WriteClass::Background))
            .chain(["1", "2", "3", "4", "5", "6"].map(|name| (name, WriteClass::Interactive)));
        let (spacing, hold) = (Duration::from_millis(5), Duration::from_millis(30));
        let order = order_of_writes(&gate, held, writers, spacing, hold).await;
        let batch = order.iter().position(|name| *name == "batch").unwrap();
        assert!(
            (1..5).contains(&batch),
            "people went first, then the batch before the last of them: {order:?}"
        );
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_does_not_keep_the_slot() {
        let gate = Arc::new(WriteGate::default());
        let held = gate.enter(WriteClass::Background).await;
        let gave_up = tokio::time::timeout(
            Duration::from_millis(20),
            gate.enter(WriteClass::Interactive),
        )
        .await;
        assert!(gave_up.is_err());
        drop(held);
        let next =
            tokio::time::timeout(Duration::from_secs(1), gate.enter(WriteClass::Background)).await;
        assert!(next.is_ok(), "the slot was free again");
    }

    #[tokio::test]
    async fn one_writer_at_a_time_under_contention() {
        let gate = Arc::new(WriteGate::default());
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let (gate, inside) = (gate.clone(), inside.clone());
                tokio::spawn(async move {
                    let class = if i % 3 == 0 {
                        WriteClass::Interactive
                    } else {
                        WriteClass::Background
                    };
                    // Some give up half-way, as timed-out requests do.
                    let wait = Duration::from_micros(if i % 5 == 0 { 50 } else { 1_000_000 });
                    if let Ok(_pass) = tokio::time::timeout(wait, gate.enter(class)).await {
                        let now = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(now, 0, "two writers at once");
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert!(
            tokio::time::timeout(Duration::from_secs(1), gate.enter(WriteClass::Background))
                .await
                .is_ok()
        );
    }
}
