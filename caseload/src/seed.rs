//! The demo and benchmark data generator: realistic, deterministic people in bulk.
//!
//! The same seed and starting point always produce the same people (names, statuses,
//! coaches, in the same id order; only the ids' time differs), so benchmark runs are
//! comparable. Rows go in as multi-row INSERTs inside one transaction per chunk, which is
//! what makes a million people a matter of minutes rather than hours.
//!
//! Ids are time-ordered (UUIDv7, one millisecond apart, ending now), like every other id the
//! product assigns: the primary key and the table then grow at one end, and a bulk action,
//! which walks its target in id order, reads and rewrites neighbouring pages instead of one
//! page per person (at a million people this more than halves a status change's writes).

use chrono::Utc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sea_orm::{DatabaseConnection, Set};
use uuid::Uuid;

use crate::CaseloadError;
use crate::store;
use crate::store::entity::person;

/// Rows per INSERT statement: 9 columns × 1,000 stays under SQLite's 32,766-parameter limit.
const ROWS_PER_STATEMENT: usize = 1_000;
/// Statements per transaction: large enough to amortise the commit's fsync.
const STATEMENTS_PER_TRANSACTION: usize = 20;

const FIRST_NAMES: &[&str] = &[
    "Ada", "Alan", "Amara", "Ana", "Ben", "Carla", "Chen", "Dana", "Diego", "Elena", "Emeka",
    "Farah", "Grace", "Hana", "Ivan", "Jamal", "Jin", "Kai", "Lara", "Liam", "Maya", "Mateo",
    "Nadia", "Noah", "Olga", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Sofia", "Tariq", "Uma",
    "Victor", "Wei", "Ximena", "Yusuf", "Zoe",
];
const LAST_NAMES: &[&str] = &[
    "Abbott", "Baker", "Castillo", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito",
    "Johnson", "Kowalski", "Lopez", "Mbeki", "Nguyen", "O'Brien", "Patel", "Quispe", "Rossi",
    "Schmidt", "Tanaka", "Usman", "Varga", "Williams", "Xu", "Yilmaz", "Zhang",
];
/// Program status codes with their share of the caseload, out of 100.
const STATUS_WEIGHTS: &[(&str, u32)] = &[
    ("ACTIVE", 70),
    ("INACTIVE", 10),
    ("GRADUATED", 10),
    ("WITHDRAWN", 4),
    ("TRANSFERRED", 4),
    ("NON_PARTICIPATING", 2),
];

/// What to generate.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// How many people to add.
    pub people: u64,
    /// The random seed; the same seed gives the same people.
    pub seed: u64,
    /// Staff users to assign as coaches; about four in five people get one of them.
    pub coaches: Vec<Uuid>,
}

/// How many people the caseload holds: the demo seeds only an empty one.
pub async fn people_count(db: &DatabaseConnection) -> Result<u64, CaseloadError> {
    store::people::count(db).await
}

/// Adds `options.people` people after those already present (school ids continue from the
/// current count, so seeding twice adds more people instead of failing on duplicates).
/// Returns how many were added.
pub async fn seed_people(
    db: &DatabaseConnection,
    options: &SeedOptions,
) -> Result<u64, CaseloadError> {
    let start = people_count(db).await?;
    let mut rng = StdRng::seed_from_u64(options.seed ^ start);
    let now = Utc::now();
    let first_id_millis = u64::try_from(now.timestamp_millis())
        .unwrap_or(0)
        .saturating_sub(options.people);
    let chunk = (ROWS_PER_STATEMENT * STATEMENTS_PER_TRANSACTION) as u64;
    let mut added = 0;
    while added < options.people {
        let in_this_transaction = chunk.min(options.people - added);
        // IMMEDIATE on SQLite, so a running node's heartbeat cannot make it fail.
        let txn = queue::database::begin_immediate(db).await?;
        let mut rows = Vec::with_capacity(ROWS_PER_STATEMENT);
        for k in added..added + in_this_transaction {
            let id_millis = first_id_millis + k;
            rows.push(generate_person(
                &mut rng,
                start + k,
                id_millis,
                &options.coaches,
                now,
            ));
            if rows.len() == ROWS_PER_STATEMENT {
                store::people::insert(&txn, std::mem::take(&mut rows)).await?;
            }
        }
        if !rows.is_empty() {
            store::people::insert(&txn, rows).await?;
        }
        txn.commit().await?;
        added += in_this_transaction;
        tracing::debug!(added, total = options.people, "seeded people");
    }
    Ok(added)
}

/// The `n`th generated person, with an id of `id_millis`' time.
fn generate_person(
    rng: &mut StdRng,
    n: u64,
    id_millis: u64,
    coaches: &[Uuid],
    now: chrono::DateTime<Utc>,
) -> person::ActiveModel {
    let first = FIRST_NAMES[rng.random_range(0..FIRST_NAMES.len())];
    let last = LAST_NAMES[rng.random_range(0..LAST_NAMES.len())];
    let email = rng.random_bool(0.9).then(|| {
        let local: String = format!("{first}.{last}{n}")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_lowercase();
        format!("{local}@example.edu")
    });
    let coach_id = (!coaches.is_empty() && rng.random_bool(0.8))
        .then(|| coaches[rng.random_range(0..coaches.len())]);
    person::ActiveModel {
        id: Set(uuid::Builder::from_unix_timestamp_millis(id_millis, &rng.random()).into_uuid()),
        school_id: Set(format!("S{n:08}")),
        first_name: Set(first.to_owned()),
        last_name: Set(last.to_owned()),
        email: Set(email),
        program_status: Set(pick_status(rng).to_owned()),
        coach_id: Set(coach_id),
        updated_by: Set(None),
        updated_at: Set(now),
    }
}

fn pick_status(rng: &mut StdRng) -> &'static str {
    let mut roll = rng.random_range(0..100);
    for (code, weight) in STATUS_WEIGHTS {
        if roll < *weight {
            return code;
        }
        roll -= weight;
    }
    STATUS_WEIGHTS[0].0
}
