//! The audit trail: every admin act on tasks and periodic jobs, every pause, and every change
//! to users, roles, tokens, people and alert reasons, recorded with who, what, which
//! targets, when and from where (ADR 0076). Changes to accounts and tokens write their entry
//! in their own transaction, so one is never without the other; acts the queue commits
//! itself write it just after.
//!
//! Read a page at a time for the Audit page, as CSV for download, and forgotten past
//! `--audit-retention` by a periodic job on one node at a time.

use std::fmt::Display;
use std::time::Duration;

use bulkq_types::audit::{
    AuditAct, AuditEntry, AuditPage, AuditSearch, COMMAND_LINE, TARGETS_NAMED,
};
use queue::periodic::{PeriodicContext, PeriodicJob, PeriodicTask, Schedule};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use crate::CaseloadError;
use crate::export::{csv_lines, defuse_formula};
use crate::store::audit as log;
use crate::store::entity::audit_event;
use crate::users::StaffUser;

/// The retention job's name in the scheduler.
pub const AUDIT_RETENTION_JOB: &str = "caseload.audit_retention";
/// How long the trail is kept unless configured otherwise: a school year and its review.
pub const AUDIT_RETENTION_DEFAULT: Duration = Duration::from_secs(400 * 24 * 3600);
/// How often the retention job runs.
const FORGET_EVERY: Duration = Duration::from_secs(3600);
/// Entries deleted per transaction, so the write lock is never held for long.
const DELETED_PER_TRANSACTION: u64 = 5_000;
/// Entries per page of the CSV.
const CSV_PAGE_ROWS: u64 = 1_000;
/// The CSV's first line.
pub const CSV_HEADER: &[u8] = b"at,actor,act,targets,target_count,detail,client\n";

/// Who acted and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The staff user; `None` for `bulkq` on a shell.
    pub id: Option<Uuid>,
    pub name: String,
    /// The client's address as the server saw it, or [`COMMAND_LINE`].
    pub client: String,
}

impl Actor {
    /// A signed-in user (or a program with their token) calling from `client`, if known.
    pub fn user(user: &StaffUser, client: Option<std::net::IpAddr>) -> Self {
        let client = client.map(|ip| ip.to_string()).unwrap_or_default();
        Self::staff(user.id, &user.username, &client)
    }

    /// Staff user `id`, named `name`, acting from `client`.
    pub fn staff(id: Uuid, name: &str, client: &str) -> Self {
        Actor {
            id: Some(id),
            name: name.to_owned(),
            client: client.to_owned(),
        }
    }

    /// Whoever runs `bulkq` on the server's shell, by their login name when it is known.
    pub fn command_line() -> Self {
        let login = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| "unknown".into());
        Actor {
            id: None,
            name: format!("{login} (shell)"),
            client: COMMAND_LINE.into(),
        }
    }
}

/// Records that `actor` did `act` to `targets` (the first [`TARGETS_NAMED`] are named, all
/// are counted), with its particulars in `detail`, on `db` (the act's own transaction
/// where it has one).
pub async fn record<C: ConnectionTrait>(
    db: &C,
    actor: &Actor,
    act: AuditAct,
    targets: &[impl Display],
    detail: impl Into<String>,
) -> Result<(), CaseloadError> {
    let named: Vec<String> = targets
        .iter()
        .take(TARGETS_NAMED)
        .map(|target| target.to_string())
        .collect();
    log::insert(
        db,
        audit_event::Model {
            id: Uuid::now_v7(),
            at: chrono::Utc::now(),
            actor_id: actor.id,
            actor: actor.name.clone(),
            area: act.area().as_str().to_owned(),
            act: act.as_str().to_owned(),
            targets: named.join(", "),
            target_count: targets.len() as i64,
            detail: detail.into(),
            client: actor.client.clone(),
        },
    )
    .await
}

/// A page of the trail as `search` asks, newest first.
pub async fn page<C: ConnectionTrait>(
    db: &C,
    search: &AuditSearch,
) -> Result<AuditPage, CaseloadError> {
    // One more than asked says whether a next page exists.
    let mut rows = log::page(db, search, None, search.limit + 1).await?;
    let more = rows.len() as u64 > search.limit;
    rows.truncate(search.limit as usize);
    let next = more
        .then(|| rows.last().map(|row| row.id.to_string()))
        .flatten();
    Ok(AuditPage {
        entries: rows.into_iter().filter_map(entry).collect(),
        next,
    })
}

/// One page of the CSV of every entry `search` matches (its `before` and `limit` aside),
/// after entry `after` (`None` for the first): the rows and the last id, or `None` when no
/// entries are left.
pub async fn csv_page<C: ConnectionTrait>(
    db: &C,
    search: &AuditSearch,
    after: Option<Uuid>,
) -> Result<Option<(Vec<u8>, Uuid)>, CaseloadError> {
    let rows = log::page(db, search, after, CSV_PAGE_ROWS).await?;
    let Some(last) = rows.last().map(|row| row.id) else {
        return Ok(None);
    };
    let csv = csv_lines(rows.into_iter().map(|row| {
        [
            row.at.to_rfc3339(),
            defuse_formula(row.actor),
            row.act,
            defuse_formula(row.targets),
            row.target_count.to_string(),
            defuse_formula(row.detail),
            defuse_formula(row.client),
        ]
    }))?;
    Ok(Some((csv, last)))
}

/// The shared view of a row; `None` for an act this version does not know (written by a
/// newer node during a rolling deploy).
fn entry(row: audit_event::Model) -> Option<AuditEntry> {
    Some(AuditEntry {
        act: AuditAct::parse(&row.act)?,
        id: row.id,
        at: row.at.to_rfc3339(),
        actor: row.actor,
        targets: row.targets,
        target_count: row.target_count,
        detail: row.detail,
        client: row.client,
    })
}

/// The job that forgets entries older than `retention`, on one node at a time.
pub fn audit_retention_job(retention: Duration) -> PeriodicJob {
    PeriodicJob::new(
        AUDIT_RETENTION_JOB,
        Schedule::Every(FORGET_EVERY),
        AuditRetention { retention },
    )
    .with_lock_at_least_half_of(FORGET_EVERY)
}

struct AuditRetention {
    retention: Duration,
}

#[async_trait::async_trait]
impl PeriodicTask for AuditRetention {
    async fn run(&self, ctx: &PeriodicContext) -> Result<(), String> {
        let deleted = forget_older_than(&ctx.store, self.retention)
            .await
            .map_err(|e| e.to_string())?;
        if deleted > 0 {
            tracing::info!(deleted, "forgot audit entries past their retention");
        }
        Ok(())
    }
}

/// Deletes the entries older than `retention`, a transaction at a time; answers how many.
pub async fn forget_older_than(
    store: &queue::Store,
    retention: Duration,
) -> Result<u64, CaseloadError> {
    let retention = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
    let Some(before) = store.clock().now().checked_sub_signed(retention) else {
        return Ok(0);
    };
    let mut deleted = 0;
    loop {
        let txn = store.begin_write().await?;
        let count = log::delete_before(&*txn, before, DELETED_PER_TRANSACTION).await?;
        txn.commit().await?;
        deleted += count;
        if count < DELETED_PER_TRANSACTION {
            return Ok(deleted);
        }
    }
}
