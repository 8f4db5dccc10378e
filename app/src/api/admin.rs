//! Queue health and repair, for admins: counts, backlog age, nodes, paused actions, and the
//! failed tasks to retry or abandon (through [`crate::api::tasks::act_on_tasks`]).

use bulkq_types::TaskStatus;
use bulkq_types::node::NodeState;
use bulkq_types::task::TaskView;
use bulkq_types::task_query::TaskQuery;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Minutes of history in the throughput chart.
pub const THROUGHPUT_MINUTES: usize = 60;
/// A running task without a checkpoint or other change for this long is listed as stalled.
pub const STALLED_AFTER_MINUTES: i64 = 15;
/// Failed tasks listed at once; the rest are reached with "all matching".
pub const PROBLEMS_SHOWN: u64 = 50;

/// One action's tasks by status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCounts {
    pub action: String,
    /// Counts in the order of [`bulkq_types::TaskStatus::ALL`].
    pub counts: Vec<i64>,
    pub paused: bool,
}

/// A node of the cluster, as its heartbeat row says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRow {
    pub node_id: String,
    pub host: String,
    pub pid: Option<i32>,
    pub version: String,
    pub started: String,
    pub seconds_since_heartbeat: i64,
    pub worker_slots: i32,
    pub tasks_running: i32,
    /// RFC 3339 time of a clean shutdown, or empty while it runs.
    pub stopped: String,
    pub state: NodeState,
}

/// A periodic job of the cluster and its last run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PeriodicJobRow {
    pub name: String,
    pub schedule: String,
    /// RFC 3339, or empty when not scheduled yet.
    pub next_run: String,
    /// RFC 3339 start of the last run, or empty before the first.
    pub last_run: String,
    /// `ok`, `failed: …`, `skipped: …`, or empty while running / before the first run.
    pub last_result: String,
    pub last_node: String,
    pub paused: bool,
    /// Its scheduler lock's bounds in seconds: held at most this long without extension…
    pub lock_at_most_seconds: i64,
    /// …and at least this long after a run's start.
    pub lock_at_least_seconds: i64,
    /// Due times that found its lock held.
    pub skipped_runs: i64,
    /// RFC 3339 time of the last of them, or empty.
    pub last_skipped: String,
}

/// A scheduler lock held right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLock {
    pub name: String,
    pub locked_by: String,
    /// RFC 3339.
    pub locked_at: String,
    /// RFC 3339.
    pub lock_until: String,
}

/// A running task that looks stuck.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StalledTask {
    pub task: TaskView,
    /// The node holding it.
    pub node: String,
    /// When it last changed (claim, checkpoint or progress), RFC 3339.
    pub last_change: String,
}

/// A failed task as the failures list shows it: with what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemTask {
    pub task: TaskView,
    /// The first line of its error.
    pub error: String,
}

/// Everything the queue health page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueHealth {
    /// Totals in the order of [`bulkq_types::TaskStatus::ALL`].
    pub totals: Vec<i64>,
    pub by_action: Vec<ActionCounts>,
    /// Tasks completed in each of the last [`THROUGHPUT_MINUTES`] minutes, oldest first.
    pub throughput: Vec<i64>,
    /// How long the longest-waiting due task has waited, in seconds.
    pub oldest_wait_seconds: Option<i64>,
    pub nodes: Vec<NodeRow>,
    pub periodic_jobs: Vec<PeriodicJobRow>,
    pub locks: Vec<HeldLock>,
    /// FAILURE and ERROR tasks (of `action`, if given), newest first.
    pub problems: Vec<ProblemTask>,
    pub problem_total: u64,
    /// Running tasks held by a dead node or quiet for [`STALLED_AFTER_MINUTES`].
    pub stalled: Vec<StalledTask>,
    /// Export files on this node's disk, and their size in bytes.
    pub export_files: u64,
    pub export_bytes: u64,
}

/// What a bulk repair did.
/// Queue health; `action` narrows the failed-task list to one action (empty for all).
#[server(endpoint = "queue_health")]
pub async fn get_queue_health(#[server(default)] action: String) -> Result<QueueHealth, AppError> {
    crate::api::ssr::respond(ssr_impl::health(action)).await
}

/// Stops (or resumes) claiming tasks of one action on every node; queued tasks wait.
/// Makes a periodic job due now: this node runs it within moments (unless paused).
#[server(endpoint = "run_periodic_job")]
pub async fn run_periodic_job(name: String) -> Result<(), AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async move {
        let user = require_user().await?;
        ssr_impl::run_periodic_now(&state()?, user, request_client(), &name).await
    })
    .await
}

/// Pauses a periodic job (no node runs it) or resumes it.
#[server(endpoint = "set_periodic_paused")]
pub async fn set_periodic_paused(name: String, paused: bool) -> Result<(), AppError> {
    use crate::api::ssr::{request_client, require_user, respond, state};
    respond(async move {
        let user = require_user().await?;
        ssr_impl::set_periodic_paused(&state()?, user, request_client(), &name, paused).await
    })
    .await
}

#[server(endpoint = "set_action_paused")]
pub async fn set_action_paused(action: String, paused: bool) -> Result<(), AppError> {
    crate::api::ssr::respond(ssr_impl::set_paused(action, paused)).await
}

/// The failed list's tasks: FAILURE and ERROR, of one action or (empty) all. The page's
/// "all matching" selection and the server's list are this one query.
pub fn problems_query(action: &str) -> TaskQuery {
    TaskQuery {
        status: Some(format!(
            "{},{}",
            TaskStatus::Failure.as_str(),
            TaskStatus::Error.as_str()
        )),
        action: Some(action.to_owned()).filter(|action| !action.is_empty()),
        ..TaskQuery::default()
    }
}

#[cfg(feature = "ssr")]
pub mod ssr_impl {
    use std::collections::{BTreeMap, HashMap};

    use caseload::users::{Role, StaffUser};
    use queue::Page;

    use super::*;
    use caseload::actions::export_files::exports_disk_use;

    use bulkq_types::audit::AuditAct;

    use crate::api::login_throttle::ClientAddress;
    use crate::api::ssr::{
        AppState, action_name, actor as audit_actor, audit_after, internal, request_client,
        require_admin, state,
    };
    use crate::api::tasks::ssr_impl::{TaskViews, task_filter};

    /// `user`, if an admin.
    pub fn admin_only(user: StaffUser) -> Result<StaffUser, AppError> {
        if user.role == Role::Admin {
            Ok(user)
        } else {
            Err(AppError::forbidden())
        }
    }

    /// The nodes with their state, by the rescuer's rule: a node is dead once silent for the
    /// node timeout or replaced by a newer start of its system id.
    fn node_rows(nodes: Vec<queue::Node>, now: chrono::DateTime<chrono::Utc>) -> Vec<NodeRow> {
        let mut newest_start: HashMap<String, chrono::DateTime<chrono::Utc>> = HashMap::new();
        for node in &nodes {
            let newest = newest_start
                .entry(node.system_id.clone())
                .or_insert(node.started_date);
            *newest = (*newest).max(node.started_date);
        }
        nodes
            .into_iter()
            .map(|node| {
                let silent = now - node.heartbeat_date;
                let replaced = newest_start[&node.system_id] > node.started_date;
                NodeRow {
                    state: NodeState::of(
                        node.stopped_date.is_some(),
                        replaced,
                        silent.to_std().unwrap_or_default(),
                        queue::runtime::NODE_TIMEOUT_DEFAULT,
                    ),
                    seconds_since_heartbeat: silent.num_seconds().max(0),
                    started: node.started_date.to_rfc3339(),
                    stopped: rfc3339(node.stopped_date),
                    host: node.host.unwrap_or_default(),
                    pid: node.pid,
                    version: node.version.unwrap_or_default(),
                    worker_slots: node.worker_slots,
                    tasks_running: node.tasks_running,
                    node_id: node.node_id,
                }
            })
            .collect()
    }

    /// The first line of an error, which says what went wrong; the rest is on the task's page.
    fn first_line(error: Option<&str>) -> String {
        error
            .and_then(|e| e.lines().next())
            .unwrap_or_default()
            .to_owned()
    }

    fn rfc3339(time: Option<chrono::DateTime<chrono::Utc>>) -> String {
        time.map(|t| t.to_rfc3339()).unwrap_or_default()
    }

    pub async fn health(action: String) -> Result<QueueHealth, AppError> {
        let admin = require_admin().await?;
        let app = state()?;
        let views = TaskViews::load(&app, admin.id).await?;
        let search = problems_query(action_name(&action)?)
            .check()
            .map_err(AppError::invalid_fields)?;
        let filter = task_filter(&app, &admin, &search).await?;
        let AppState { store, bulk, .. } = app;
        let exports = exports_disk_use(&bulk.exports_dir).map_err(internal)?;
        let now = store.clock().now();
        let counts = store.task_count_by_status().await.map_err(internal)?;
        let paused: Vec<String> = store
            .component_paused_list()
            .await
            .map_err(internal)?
            .into_iter()
            // A limit's pause is not an admin's to resume: it lifts itself as places free.
            .filter(|pause| pause.paused_by != queue::LIMIT_PAUSER)
            .map(|p| p.component)
            .collect();
        let column = |status: TaskStatus| TaskStatus::ALL.iter().position(|s| *s == status);
        let mut by_action: BTreeMap<String, Vec<i64>> = paused
            .iter()
            .map(|a| (a.clone(), vec![0; TaskStatus::ALL.len()]))
            .collect();
        let mut totals = vec![0; TaskStatus::ALL.len()];
        for count in counts {
            if let Some(i) = column(count.status) {
                by_action
                    .entry(count.component)
                    .or_insert_with(|| vec![0; TaskStatus::ALL.len()])[i] += count.count;
                totals[i] += count.count;
            }
        }
        let problems = store
            .task_list(&filter, Page::first(PROBLEMS_SHOWN))
            .await
            .map_err(internal)?;
        Ok(QueueHealth {
            export_files: exports.files,
            export_bytes: exports.bytes,
            totals,
            by_action: by_action
                .into_iter()
                .map(|(action, counts)| ActionCounts {
                    paused: paused.contains(&action),
                    action,
                    counts,
                })
                .collect(),
            throughput: store
                .task_throughput(now, THROUGHPUT_MINUTES)
                .await
                .map_err(internal)?,
            oldest_wait_seconds: store
                .task_oldest_due(now)
                .await
                .map_err(internal)?
                .map(|due| (now - due).num_seconds().max(0)),
            nodes: node_rows(store.node_list().await.map_err(internal)?, now),
            periodic_jobs: periodic_rows(&store).await?,
            locks: store
                .lock_list_held()
                .await
                .map_err(internal)?
                .into_iter()
                .map(|lock| HeldLock {
                    locked_at: lock.locked_at.to_rfc3339(),
                    lock_until: lock.lock_until.to_rfc3339(),
                    name: lock.name,
                    locked_by: lock.locked_by,
                })
                .collect(),
            problem_total: store.task_count(&filter).await.map_err(internal)?,
            stalled: store
                .task_list_stalled(
                    now - queue::runtime::NODE_TIMEOUT_DEFAULT,
                    now - chrono::Duration::minutes(STALLED_AFTER_MINUTES),
                    PROBLEMS_SHOWN,
                )
                .await
                .map_err(internal)?
                .into_iter()
                .map(|task| StalledTask {
                    node: task.scheduled_by_process.clone().unwrap_or_default(),
                    last_change: task.modified_date.to_rfc3339(),
                    task: views.view(task),
                })
                .collect(),
            problems: problems
                .into_iter()
                .map(|task| ProblemTask {
                    error: first_line(task.workflow_status_desc.as_deref()),
                    task: views.view(task),
                })
                .collect(),
        })
    }

    /// The cluster's periodic jobs, by name.
    pub async fn periodic_rows(store: &queue::Store) -> Result<Vec<PeriodicJobRow>, AppError> {
        Ok(store
            .periodic_list()
            .await
            .map_err(internal)?
            .into_iter()
            .map(|job| PeriodicJobRow {
                next_run: rfc3339(job.next_run_at),
                last_run: rfc3339(job.last_started_at),
                last_result: job.last_result.unwrap_or_default(),
                last_node: job.last_node.unwrap_or_default(),
                paused: job.paused,
                lock_at_most_seconds: job.lock_at_most_ms.unwrap_or_default() / 1000,
                lock_at_least_seconds: job.lock_at_least_ms.unwrap_or_default() / 1000,
                skipped_runs: job.skipped_runs,
                last_skipped: rfc3339(job.last_skipped_at),
                name: job.name,
                schedule: job.schedule,
            })
            .collect())
    }

    /// Makes periodic job `name` due now (admins); 409 when there is no such job or it
    /// is paused.
    pub async fn run_periodic_now(
        app: &AppState,
        user: StaffUser,
        client: ClientAddress,
        name: &str,
    ) -> Result<(), AppError> {
        let admin = admin_only(user)?;
        let name = action_name(name)?;
        if !app.store.periodic_run_now(name).await.map_err(internal)? {
            return Err(AppError::Conflict(
                "No periodic job is called that, or it is paused: resume it first.".into(),
            ));
        }
        tracing::info!(admin = %admin.username, job = name, "periodic job run now");
        let actor = audit_actor(&admin, client);
        audit_after(app, &actor, AuditAct::PeriodicRunNow, &[name], "").await
    }

    /// Pauses or resumes periodic job `name` (admins); 404 when there is no such job.
    pub async fn set_periodic_paused(
        app: &AppState,
        user: StaffUser,
        client: ClientAddress,
        name: &str,
        paused: bool,
    ) -> Result<(), AppError> {
        let admin = admin_only(user)?;
        let name = action_name(name)?;
        let store = &app.store;
        let changed = store
            .periodic_set_paused(name, paused)
            .await
            .map_err(internal)?;
        if !changed
            && !store
                .periodic_list()
                .await
                .map_err(internal)?
                .iter()
                .any(|job| job.name == name)
        {
            return Err(AppError::NotFound("Periodic job".into()));
        }
        tracing::info!(admin = %admin.username, job = name, paused, changed, "periodic job pause changed");
        if !changed {
            return Ok(());
        }
        let act = if paused {
            AuditAct::PeriodicPause
        } else {
            AuditAct::PeriodicResume
        };
        audit_after(app, &audit_actor(&admin, client), act, &[name], "").await
    }

    pub async fn set_paused(action: String, paused: bool) -> Result<(), AppError> {
        let admin = require_admin().await?;
        let action = action_name(&action)?;
        if action.is_empty() {
            return Err(AppError::invalid("Name the action to pause."));
        }
        let app = state()?;
        let store = &app.store;
        let changed = if paused {
            store.component_pause(action, &admin.username).await
        } else {
            store.component_resume(action).await
        }
        .map_err(internal)?;
        tracing::info!(admin = %admin.username, action, paused, "action pause changed");
        if !changed {
            return Ok(());
        }
        let act = if paused {
            AuditAct::ActionPause
        } else {
            AuditAct::ActionResume
        };
        let actor = audit_actor(&admin, request_client());
        audit_after(&app, &actor, act, &[action], "").await
    }
}
