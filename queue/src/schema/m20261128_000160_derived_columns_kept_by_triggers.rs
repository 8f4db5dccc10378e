//! PostgreSQL: `active_unique_key` and `problem_status` (`m20261124_000080_hot_updates`)
//! become plain columns kept by triggers, no longer stored generated columns.
//!
//! PostgreSQL computes every stored generated column on every UPDATE of a row, and forms
//! the row once more to hold them: each claim and completion paid that for two values
//! that neither changes for a task without a key (ADR 0007). Now:
//! - a row trigger before INSERT sets both for a row that may need them (a key, a status
//!   other than QUEUED, or a value given): before the unique index's `ON CONFLICT` test
//!   sees the row, so an enqueue with a key still finds its arbiter. A plain enqueue does
//!   not fire it;
//! - the claim moves QUEUED to EXECUTING, which changes neither; the completion clears
//!   both itself (a completed task is neither active nor a problem);
//! - every other UPDATE runs the statement trigger, which now ends by setting both, from
//!   the same expressions, on the rows that hold other values, so no writer can forget
//!   them: the store's other transitions, an admin's repair, an older node, a statement
//!   typed by hand. Its own UPDATE sets `bulkq.counted`, so the trigger passes over it.
//!
//! `down` cannot make the columns generated again in place (PostgreSQL 17 can), and dropping
//! and adding them would renumber the table's columns under every session's cached plan of
//! `SELECT * FROM queue_claim(…)`. So it leaves them plain, kept for every INSERT and UPDATE
//! by the row trigger, which computes what the generated columns did; the columns'
//! migration drops that trigger with them.
//!
//! SQLite keeps its virtual generated columns, which cost nothing on a write.

use sea_orm_migration::prelude::*;

use super::m20261124_000080_hot_updates as hot_updates;
use super::m20261124_000090_steady_plans as steady;
use super::m20261127_000140_counted_claims as counted;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// `separator`-joined `part(name, expression)` for each derived column.
fn each_column(separator: &str, part: impl Fn(&str, &str) -> String) -> String {
    hot_updates::GENERATED
        .iter()
        .map(|(name, _, expression)| part(name, expression))
        .collect::<Vec<_>>()
        .join(separator)
}

/// The row trigger's function: `NEW`'s derived columns from the generated columns'
/// expressions, evaluated over `NEW` as a one-row table named like the task table.
fn keeper_function() -> String {
    let expressions = each_column(", ", |_, expression| expression.to_owned());
    let targets = each_column(", ", |name, _| format!("NEW.{name}"));
    format!(
        "CREATE OR REPLACE FUNCTION {keeper}() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           SELECT {expressions} INTO {targets} FROM (SELECT NEW.*) AS queue_task;
           RETURN NEW;
         END $$",
        keeper = hot_updates::DERIVED_KEEPER,
    )
}

/// The row trigger before `events`. It passes over a queued row without a key and without
/// derived values (a plain enqueue, a claim's row before it), which holds what the
/// expressions give already.
fn keeper_trigger(events: &str) -> String {
    let given = each_column(" OR ", |name, _| format!("NEW.{name} IS NOT NULL"));
    format!(
        "CREATE TRIGGER {keeper} BEFORE {events} ON queue_task FOR EACH ROW \
         WHEN (NEW.unique_key IS NOT NULL OR NEW.workflow_status <> 'QUEUED' OR {given}) \
         EXECUTE FUNCTION {keeper}()",
        keeper = hot_updates::DERIVED_KEEPER,
    )
}

/// The statement trigger's last step after an UPDATE: the changed rows whose derived values
/// differ from the expressions' get the expressions' values, in an UPDATE the trigger
/// passes over.
pub(super) fn set_after_update() -> String {
    let written = each_column(", ", |name, expression| {
        format!("{name} AS written_{name}, {expression} AS {name}")
    });
    let assignments = each_column(", ", |name, _| format!("{name} = derived.{name}"));
    let differs = each_column(" OR ", |name, _| {
        format!("derived.written_{name} IS DISTINCT FROM derived.{name}")
    });
    format!(
        "
                {counting}
                UPDATE queue_task SET {assignments}
                FROM (SELECT id, {written} FROM new_rows) AS derived
                WHERE queue_task.id = derived.id AND ({differs});
                {done}",
        counting = counted::COUNTING,
        done = counted::COUNTING_DONE,
    )
}

/// The completion's assignments: a completed task is neither active nor a problem.
fn completion_clears() -> String {
    each_column("", |name, _| format!(", {name} = NULL"))
}

/// Statements replacing the row trigger with one before `events`.
fn keeper_before(events: &str) -> [String; 2] {
    [
        format!(
            "DROP TRIGGER IF EXISTS {} ON queue_task",
            hot_updates::DERIVED_KEEPER
        ),
        keeper_trigger(events),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// Each statement also applies after `down`, which left the columns plain.
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let plain = each_column(", ", |name, _| {
            format!("ALTER COLUMN {name} DROP EXPRESSION IF EXISTS")
        });
        let [drop_trigger, create_trigger] = keeper_before("INSERT");
        let statements = [
            &format!("ALTER TABLE queue_task {plain}"),
            &keeper_function(),
            &drop_trigger,
            &create_trigger,
            &counted::trigger_function(counted::SKIP_COUNTED, &set_after_update()),
            steady::TRIGGER_FUNCTION_SETTINGS,
            &counted::complete(&completion_clears()),
        ];
        super::on_postgres(manager, &statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let [drop_trigger, create_trigger] = keeper_before("INSERT OR UPDATE");
        let statements = [
            &drop_trigger,
            &create_trigger,
            &counted::trigger_function(counted::SKIP_COUNTED, ""),
            steady::TRIGGER_FUNCTION_SETTINGS,
            &counted::complete(""),
        ];
        super::on_postgres(manager, &statements).await
    }
}
