//! The only place caseload's SQL lives: every query the crate builds or runs is here, and
//! the domain modules decide what to read and write and call these functions, on any
//! connection or transaction (the queue's executors pass their batch transaction). A test
//! below fails on query-building code anywhere else in `caseload/src`.
//!
//! # Layout
//! - [`entity`]: SeaORM entities for the caseload tables (created by the `migration` crate).
//! - `people`: people by id (the run_as rule as a condition, locks, the columns a change
//!   sets), counted and added in bulk.
//! - `people_sync`: people kept in step with the school's records, by school id.
//! - `statuses`: program statuses.
//! - `watches`: watches set and cleared.
//! - `once_per_task`: the insert behind every "once per task and person" record.
//! - `status_changes`: the history of status changes a task made.
//! - `coach_changes`: the history of coach changes a task made.
//! - `alerts`: early alerts raised, closed, listed and counted.
//! - `alert_reasons`: the reasons an alert may give.
//! - `sends`: what the three send logs share.
//! - `email_log`: bulk email's recipients, claimed, recorded and forgotten.
//! - `coach_notices`: which coaches a task has told of their people.
//! - `task_notices`: who has been told of a task's end.
//! - `uploads`: the files uploaded for people imports, stored in chunks.
//! - `imports`: what an import records as it runs (school ids claimed, problems).
//! - `name_ranges`: SQLite's counted name ranges, which find a deep page of a status or a
//!   caseload.
//! - `search`: the caseload search's counts, pages and walk steps, and the SQL they build.
//! - `users`: staff users.
//! - `tokens`: personal API tokens.
//! - `audit`: the audit trail, written, paged and forgotten.
//! - `admin_alerts`: the episodes of admins' alerts about the queue.
//! - `send_rate`: the mail relay's token bucket, shared by the cluster.
//! - `outcomes`: each person's outcome in a bulk task.

pub(crate) mod admin_alerts;
pub(crate) mod alert_reasons;
pub(crate) mod alerts;
pub(crate) mod audit;
pub(crate) mod coach_changes;
pub(crate) mod coach_notices;
pub(crate) mod email_log;
pub mod entity;
pub(crate) mod imports;
pub(crate) mod name_ranges;
mod once_per_task;
pub(crate) mod outcomes;
pub(crate) mod people;
pub(crate) mod people_sync;
pub(crate) mod search;
pub(crate) mod send_rate;
mod sends;
pub(crate) mod status_changes;
pub(crate) mod statuses;
pub(crate) mod task_notices;
pub(crate) mod tokens;
pub(crate) mod uploads;
pub(crate) mod users;
pub(crate) mod watches;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// What builds or runs a query, as it reads in code: none of it belongs outside `store/`.
    const QUERY_TOKENS: &[&str] = &[
        "Statement::",
        "StatementBuilder",
        "Query::",
        "sea_query",
        "Expr::",
        "::find()",
        "find_by_id",
        "find_by_statement",
        "insert_many",
        "update_many",
        "delete_many",
        ".exec(",
        "exec_with_returning",
        "exec_without_returning",
        "query_all",
        "query_one",
        "execute_raw",
        ".execute(",
        "IdListFilter",
        "in_id_list",
        "id_rows",
        "lock_exclusive",
        "Entity::",
        "EntityTrait",
        "ActiveModelTrait",
        "ColumnTrait",
        "PaginatorTrait",
        "QueryFilter",
        "QueryOrder",
        "QuerySelect",
    ];

    /// The `.rs` files under `dir`, at any depth, in name order.
    fn rust_files(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).expect("a source folder reads") {
            let path = entry.expect("a source folder lists").path();
            if path.is_dir() {
                files.extend(rust_files(&path));
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
        files.sort();
        files
    }

    fn is_name_char(c: char) -> bool {
        c.is_alphanumeric() || c == '_'
    }

    /// Whether `token` stands in `line` on its own, not as part of a longer name
    /// (`TaskQuery::` is not `Query::`).
    fn stands_in(line: &str, token: &str) -> bool {
        line.match_indices(token).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let after = line[at + token.len()..].chars().next();
            let joined_before = token.starts_with(is_name_char) && before.is_some_and(is_name_char);
            let joined_after = token.ends_with(is_name_char) && after.is_some_and(is_name_char);
            !(joined_before || joined_after)
        })
    }

    /// Each query token on a line of `file` that is not a comment, as `file:line: token`.
    fn query_lines(file: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let name = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(file);
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .flat_map(|(index, line)| {
                QUERY_TOKENS
                    .iter()
                    .filter(|token| stands_in(line, token))
                    .map(move |token| {
                        let at = index + 1;
                        format!("{}:{at}: `{token}` in {}", name.display(), line.trim())
                    })
            })
            .collect()
    }

    #[test]
    fn queries_are_built_and_run_only_in_the_store() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let store = src.join("store");
        let (inside, outside): (Vec<_>, Vec<_>) = rust_files(&src)
            .into_iter()
            .partition(|file| file.starts_with(&store));
        assert!(
            inside.iter().any(|file| !query_lines(file).is_empty()),
            "the query tokens no longer match the store's own queries"
        );
        let found: Vec<String> = outside.iter().flat_map(|file| query_lines(file)).collect();
        assert!(
            found.is_empty(),
            "queries outside caseload/src/store/ (move them into a store module):\n{}",
            found.join("\n")
        );
    }
}
