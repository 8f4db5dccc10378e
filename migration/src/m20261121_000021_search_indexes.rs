//! Indexes that let caseload search answer broad text searches without visiting the table
//! for every match (see ARCHITECTURE.md, "Search").
//!
//! - The name prefix indexes of `m20261121_000020` become covering: each holds, after
//!   `lower(column)`, the sort key (`last_name, first_name, id`) and every column a name
//!   search tests (`school_id`), so a page of "Ada" is sorted from the index alone.
//! - SQLite's "contains" table keeps token positions and its text's case (`detail='full'`,
//!   `case_sensitive 1` over the already lowercased text), so a phrase query matches exactly
//!   what `LIKE '%text%'` on that text does; and it stores each person's sort key
//!   (`contentless_unindexed`), so a page of 38,000 O'Briens is counted and sorted without
//!   reading `person`.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use crate::m20261121_000020_caseload_actions::contains_expression as contains_text;

/// The columns a name word is a prefix of; each gets a covering index.
const NAME_COLUMNS: [&str; 3] = ["first_name", "last_name", "school_id"];

/// A layout of SQLite's `person_contains` FTS5 table.
pub(crate) struct ContainsTable {
    /// Columns of `person` the table stores (UNINDEXED) next to the text it indexes.
    pub stored: &'static [&'static str],
    pub options: &'static str,
}

/// As `m20261121_000020` created it: rowids only, a superset of "contains".
const CONTAINS_BEFORE: ContainsTable = ContainsTable {
    stored: &[],
    options: "content='', contentless_delete=1, tokenize='trigram', detail='none'",
};

/// Exact phrase matches, with the sort key of each person.
pub(crate) const CONTAINS_AFTER: ContainsTable = ContainsTable {
    stored: &["last_name", "first_name", "id"],
    options: "content='', contentless_delete=1, contentless_unindexed=1, \
              tokenize='trigram case_sensitive 1', detail='full'",
};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, &AFTER).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        run(manager, &BEFORE).await
    }
}

/// The search indexes of one side of this migration.
struct Layout {
    /// The name prefix indexes: `idx_person_<prefix>_<column>`, on `lower(column)` and then
    /// these columns.
    prefix: &'static str,
    covering: &'static str,
    /// The one they replace.
    replaces: &'static str,
    contains: ContainsTable,
}

const BEFORE: Layout = Layout {
    prefix: "lower",
    covering: "",
    replaces: "search",
    contains: CONTAINS_BEFORE,
};

const AFTER: Layout = Layout {
    prefix: "search",
    covering: ", last_name, first_name, id, school_id",
    replaces: "lower",
    contains: CONTAINS_AFTER,
};

/// Brings the search indexes to `layout`.
async fn run(manager: &SchemaManager<'_>, layout: &Layout) -> Result<(), DbErr> {
    let backend = manager.get_database_backend();
    let mut statements = Vec::new();
    for column in NAME_COLUMNS {
        statements.push(format!(
            "DROP INDEX idx_person_{}_{column}",
            layout.replaces
        ));
        statements.push(format!(
            "CREATE INDEX idx_person_{}_{column} ON person ({}{})",
            layout.prefix,
            lowered(backend, column),
            layout.covering
        ));
    }
    if backend == DatabaseBackend::Sqlite {
        statements.extend(rebuild_contains(&layout.contains));
    }
    crate::execute_all(manager, statements).await
}

/// `lower(column)` as search compares it: in byte order (the "C" collation) on PostgreSQL.
fn lowered(backend: DatabaseBackend, column: &str) -> String {
    match backend {
        DatabaseBackend::Postgres => format!("(lower({column}) COLLATE \"C\")"),
        _ => format!("(lower({column}))"),
    }
}

/// Recreates SQLite's `person_contains` in `layout`, fills it from `person` (8 to 20 s at a
/// million people), and recreates the triggers that keep it current: on insert, on delete,
/// and on updates of the searched columns (which include the stored sort key; `id` never
/// changes), so status changes never touch it.
pub(crate) fn rebuild_contains(layout: &ContainsTable) -> Vec<String> {
    let columns = |row: &str| {
        let mut values = vec![format!("{row}.rowid"), contains_text(row)];
        values.extend(layout.stored.iter().map(|column| format!("{row}.{column}")));
        values.join(", ")
    };
    let names = ["rowid", "text"]
        .iter()
        .chain(layout.stored)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let insert = format!(
        "INSERT INTO person_contains ({names}) VALUES ({})",
        columns("new")
    );
    let delete = "DELETE FROM person_contains WHERE rowid = old.rowid";
    let definition = ["text"]
        .into_iter()
        .map(str::to_owned)
        .chain(layout.stored.iter().map(|c| format!("{c} UNINDEXED")))
        .chain([layout.options.to_owned()])
        .collect::<Vec<_>>()
        .join(", ");
    let mut statements: Vec<String> = ["insert", "delete", "update"]
        .iter()
        .map(|t| format!("DROP TRIGGER IF EXISTS person_contains_{t}"))
        .collect();
    statements.extend([
        "DROP TABLE person_contains".to_owned(),
        // SQLite 3.51 leaves the shadow table of a `contentless_unindexed` table behind.
        "DROP TABLE IF EXISTS person_contains_content".to_owned(),
        format!("CREATE VIRTUAL TABLE person_contains USING fts5({definition})"),
        format!(
            "INSERT INTO person_contains ({names}) SELECT {} FROM person",
            columns("person")
        ),
        format!("CREATE TRIGGER person_contains_insert AFTER INSERT ON person BEGIN {insert}; END"),
        format!("CREATE TRIGGER person_contains_delete AFTER DELETE ON person BEGIN {delete}; END"),
        format!(
            "CREATE TRIGGER person_contains_update \
             AFTER UPDATE OF first_name, last_name, school_id, email ON person \
             BEGIN {delete}; {insert}; END"
        ),
    ]);
    statements
}
