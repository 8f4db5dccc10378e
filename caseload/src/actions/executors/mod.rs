//! One [`queue::TaskExecutor`] per bulk action (and the people import, `people_import`), each a [`super::walk::BatchAction`] handed to
//! [`super::walk::Walk::run`] around the domain operation of its module in the crate root.

pub(crate) mod email;
pub(crate) mod export;
pub(crate) mod people_import;
pub(crate) mod status_change;
pub(crate) mod watches;
