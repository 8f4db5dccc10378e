//! PostgreSQL's "contains" search moves to a narrow table of its own, `person_contains`
//! (id, searched text, sort key), like SQLite's FTS5 table of the same name.
//!
//! The trigram index used to sit on an expression over `person`: it found a broad search's
//! matches quickly, but checking each candidate and reading its sort key visited pages all
//! over the wide `person` table on every pass, which made a page of results slow (ADR 0020).
//! The narrow table is a fraction of that size, so the same pass reads far fewer pages, and
//! a "contains" search alone never reads `person`. It also takes the trigram index off
//! `person`, whose every non-HOT update (a status change is one) used to insert into that
//! index too.
//!
//! Kept current by triggers: a statement-level one for inserts (a seed of a million people
//! adds them through one transition table, not a million function calls), a row-level one
//! for updates of the searched columns (PostgreSQL allows no transition table on a trigger
//! with a column list), and deletes follow the foreign key. SQLite is unchanged.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DatabaseBackend;

use crate::m20261121_000020_caseload_actions::contains_expression as contains_text;

/// The columns of `person_contains`, filled from `row`.
fn contains_row(row: &str) -> String {
    format!(
        "{row}.id, {}, {row}.last_name, {row}.first_name",
        contains_text(row)
    )
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let columns = "id, text, last_name, first_name";
        let statements = [
            "CREATE TABLE person_contains (\
                 id uuid PRIMARY KEY REFERENCES person (id) ON DELETE CASCADE, \
                 text text NOT NULL, \
                 last_name varchar NOT NULL, \
                 first_name varchar NOT NULL)"
                .to_owned(),
            format!(
                "INSERT INTO person_contains ({columns}) SELECT {} FROM person",
                contains_row("person")
            ),
            "CREATE INDEX idx_person_contains_text ON person_contains \
             USING gin (text gin_trgm_ops)"
                .to_owned(),
            format!(
                "CREATE FUNCTION person_contains_insert() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN \
                   INSERT INTO person_contains ({columns}) SELECT {} FROM inserted; \
                   RETURN NULL; \
                 END $$",
                contains_row("inserted")
            ),
            "CREATE TRIGGER person_contains_insert AFTER INSERT ON person \
             REFERENCING NEW TABLE AS inserted \
             FOR EACH STATEMENT EXECUTE FUNCTION person_contains_insert()"
                .to_owned(),
            format!(
                "CREATE FUNCTION person_contains_update() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN \
                   UPDATE person_contains SET text = {}, last_name = new.last_name, \
                     first_name = new.first_name \
                   WHERE id = new.id; \
                   RETURN NULL; \
                 END $$",
                contains_text("new")
            ),
            "CREATE TRIGGER person_contains_update \
             AFTER UPDATE OF first_name, last_name, school_id, email ON person \
             FOR EACH ROW EXECUTE FUNCTION person_contains_update()"
                .to_owned(),
            "DROP INDEX idx_person_contains".to_owned(),
        ];
        crate::execute_all(manager, statements).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DatabaseBackend::Postgres {
            return Ok(());
        }
        let statements = [
            "DROP TRIGGER person_contains_update ON person".to_owned(),
            "DROP TRIGGER person_contains_insert ON person".to_owned(),
            "DROP FUNCTION person_contains_update()".to_owned(),
            "DROP FUNCTION person_contains_insert()".to_owned(),
            "DROP TABLE person_contains".to_owned(),
            format!(
                "CREATE INDEX idx_person_contains ON person USING gin (({}) gin_trgm_ops)",
                contains_text("person")
            ),
        ];
        crate::execute_all(manager, statements).await
    }
}
