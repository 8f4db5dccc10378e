//! The types browser and server share, and nothing that needs a database or HTTP: staff
//! [`accounts`] and tokens, the [`audit`] trail's acts and filters, people from the school's records ([`person_records`], [`people_import`]), a task's
//! states and the pure decisions between them ([`state`]), the bulk actions' names and
//! reports ([`actions`]) and each person's [`outcomes`], early [`alerts`], what a request may ask ([`requests`], [`filter`], [`export`], a task list's [`task_query`]), a
//! queue node's state ([`node`]), the character rule all user text obeys ([`text`]), and numbers and quotes as people read
//! them ([`words`]).
//!
//! The dashboard's WebAssembly build uses these exact types, so a status, an action name or
//! an export column is spelt once (ADR 0036). SeaORM's derives for [`state::TaskStatus`]
//! and OpenAPI schemas come behind the `sea-orm` and `openapi` features.

pub mod accounts;
pub mod actions;
pub mod alerts;
pub mod audit;
pub mod export;
pub mod filter;
pub mod node;
pub mod outcomes;
pub mod people;
pub mod people_import;
pub mod person_records;
pub mod requests;
pub mod state;
pub mod task;
pub mod task_query;
pub mod text;
pub mod words;

pub use state::TaskStatus;
