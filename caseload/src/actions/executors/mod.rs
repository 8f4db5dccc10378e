//! One [`queue::TaskExecutor`] per bulk action, each a thin loop over [`super::walk::Walk`]
//! around the domain operation of its module in the crate root.

pub(crate) mod email;
pub(crate) mod export;
pub(crate) mod status_change;
pub(crate) mod watches;
