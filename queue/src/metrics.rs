//! What the queue reports to the `metrics` facade, and under which names. The crate records
//! only; the application installs a recorder (the server exports Prometheus text at
//! `/metrics`) or none, in which case every call here is a no-op.
//!
//! Counters and histograms carry the task's component as a label, so an administrator sees
//! which kind of work is slow or failing. Tasks by status are not counted here: they are
//! rows, counted by triggers, and the exporter reads those counts at scrape time
//! ([`crate::Store::task_count_by_status`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::state::Transition;
use crate::task::Task;

pub const CLAIMED: &str = "bulkq_tasks_claimed_total";
pub const FINISHED: &str = "bulkq_task_attempts_finished_total";
pub const RESCUED: &str = "bulkq_tasks_rescued_total";
pub const EXECUTION: &str = "bulkq_task_execution_seconds";
pub const QUEUE_WAIT: &str = "bulkq_task_queue_wait_seconds";
pub const SLOTS_IN_USE: &str = "bulkq_executor_slots_in_use";
pub const SLOTS: &str = "bulkq_executor_slots";
/// Filled by the exporter at scrape time, described here with the others.
pub const TASKS: &str = "bulkq_tasks";

/// Registers every metric's help text and unit with the installed recorder; call once after
/// installing it.
pub fn describe() {
    describe_counter!(CLAIMED, "Tasks claimed by this node's producer");
    describe_counter!(
        FINISHED,
        "Attempts finished by this node, by what they led to (outcome: completed, retry, \
         failure, error, handed_back)"
    );
    describe_counter!(
        RESCUED,
        "Tasks taken from dead nodes by this node (outcome: retried, failed)"
    );
    describe_histogram!(
        EXECUTION,
        Unit::Seconds,
        "How long one attempt's executor ran"
    );
    describe_histogram!(
        QUEUE_WAIT,
        Unit::Seconds,
        "From when a task was due (its run_at) to its claim"
    );
    describe_gauge!(SLOTS_IN_USE, "Executor slots of this node running a task");
    describe_gauge!(SLOTS, "Executor slots of this node");
    describe_gauge!(TASKS, "Tasks in the database, by status and component");
}

/// The producer claimed `tasks` at `now`.
pub(crate) fn claimed(tasks: &[Task], now: DateTime<Utc>) {
    for task in tasks {
        let component = task.execution_component_name.clone();
        counter!(CLAIMED, "component" => component.clone()).increment(1);
        let wait = (now - task.run_at).to_std().unwrap_or_default();
        histogram!(QUEUE_WAIT, "component" => component).record(wait.as_secs_f64());
    }
}

/// An attempt of a `component` task ran for `ran` and led to `transition`.
pub(crate) fn attempt_finished(component: &str, ran: Duration, transition: &Transition) {
    let outcome = match transition {
        Transition::Complete => "completed",
        Transition::Retry { .. } => "retry",
        Transition::Fail { .. } => "failure",
        Transition::Error { .. } => "error",
        Transition::HandBack => "handed_back",
        Transition::Yield => "yielded",
        Transition::Abandon { .. } | Transition::Requeue => "other",
    };
    let component = component.to_owned();
    histogram!(EXECUTION, "component" => component.clone()).record(ran.as_secs_f64());
    counter!(FINISHED, "component" => component, "outcome" => outcome).increment(1);
}

/// The rescuer put `retried` tasks back and failed `failed` (out of attempts).
pub(crate) fn rescued(retried: usize, failed: usize) {
    counter!(RESCUED, "outcome" => "retried").increment(retried as u64);
    counter!(RESCUED, "outcome" => "failed").increment(failed as u64);
}

/// This node has `slots` executor slots.
pub(crate) fn slots(slots: usize) {
    gauge!(SLOTS).set(slots as f64);
}

/// A slot started (`+1`) or stopped (`-1`) running a task.
pub(crate) fn slot_in_use(change: f64) {
    gauge!(SLOTS_IN_USE).increment(change);
}
