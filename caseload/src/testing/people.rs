//! People with predictable names and addresses, for tests.

use chrono::Utc;
use sea_orm::{ConnectionTrait, Set};
use uuid::Uuid;

use crate::store;
use crate::store::entity::person;

/// Inserts `count` people in ACTIVE, coached by `coach`, with addresses `p{n}@example.edu`
/// (`tag` keeps school ids unique across calls); returns their ids in insertion order.
pub async fn insert_people<C: ConnectionTrait>(
    db: &C,
    tag: &str,
    count: usize,
    coach: Option<Uuid>,
) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
    let rows = ids.iter().enumerate().map(|(n, id)| person::ActiveModel {
        id: Set(*id),
        school_id: Set(format!("{tag}-{n}")),
        first_name: Set(format!("First{n}")),
        last_name: Set(format!("{tag}Last")),
        email: Set(Some(format!("{tag}{n}@example.edu"))),
        program_status: Set("ACTIVE".into()),
        coach_id: Set(coach),
        updated_by: Set(None),
        updated_at: Set(Utc::now()),
    });
    for chunk in rows.collect::<Vec<_>>().chunks(1_000) {
        store::people::insert(db, chunk.to_vec()).await.unwrap();
    }
    ids
}

/// Makes `watcher` watch every person, in one statement: the watches a caseload keeps
/// already, for benchmarks of a Watch on a large table.
pub async fn watch_everyone<C: ConnectionTrait>(db: &C, watcher: Uuid) {
    store::watches::insert_everyone(db, watcher, Utc::now())
        .await
        .unwrap();
}
