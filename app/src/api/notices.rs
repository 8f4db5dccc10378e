//! The bell in the top bar: the signed-in user's finished and failed tasks, and how many
//! ended since they last opened it.

use bulkq_types::task::TaskView;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// What the bell shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notices {
    /// Tasks that ended since the bell was last opened (at most 99).
    pub unread: u64,
    /// More than `unread` did.
    pub more: bool,
    /// The latest ends, the latest first.
    pub tasks: Vec<TaskView>,
}

impl Notices {
    /// The badge's text: empty when nothing is unread, `99+` beyond the count.
    pub fn badge(&self) -> String {
        match (self.unread, self.more) {
            (0, _) => String::new(),
            (n, false) => n.to_string(),
            (n, true) => format!("{n}+"),
        }
    }
}

/// The signed-in user's bell.
#[server(endpoint = "notices")]
pub async fn get_notices() -> Result<Notices, AppError> {
    use crate::api::ssr::{require_user, respond, state};
    use crate::api::tasks::ssr_impl::TaskViews;
    respond(async move {
        let user = require_user().await?;
        let app = state()?;
        let bell = caseload::bell::bell(&app.db, &app.store, user.id).await?;
        let views = TaskViews::load(&app, user.id).await?;
        Ok(Notices {
            unread: bell.unread,
            more: bell.more,
            tasks: bell
                .ended
                .into_iter()
                .map(|task| views.view(task))
                .collect(),
        })
    })
    .await
}

/// Marks read every end up to `up_to`, the latest the opened bell showed: one that ended
/// meanwhile stays unread.
#[server(endpoint = "notices/read")]
pub async fn mark_notices_read(up_to: chrono::DateTime<chrono::Utc>) -> Result<(), AppError> {
    use crate::api::ssr::{internal, require_user, respond, state};
    respond(async move {
        let user = require_user().await?;
        let app = state()?;
        let txn = app
            .store
            .begin_write_as(queue::WriteClass::Interactive)
            .await
            .map_err(internal)?;
        caseload::bell::mark_seen(&*txn, user.id, up_to).await?;
        txn.commit().await.map_err(internal)
    })
    .await
}
