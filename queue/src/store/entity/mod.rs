//! SeaORM entities of the queue's tables. Private to the store: callers see [`crate::Task`]
//! and the other re-exported row types, never the entities' query builders.

pub mod component_pause;
pub mod component_slot;
pub mod node;
pub mod periodic_job;
pub mod ready;
pub mod scheduler_lock;
pub mod task;
pub mod task_count;
pub mod task_event;
pub mod throughput;
