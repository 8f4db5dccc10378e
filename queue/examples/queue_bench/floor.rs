//! The latency scenario's baseline: what two durable commits in a row cost at the scenario's
//! cadence, with no queue around them.
//!
//! A task's way from enqueue to executor holds two commits that must both reach the disk:
//! the enqueuing transaction's COMMIT, and then the claim (one statement, committed on its
//! own) by the node it woke. Neither can be skipped without trading a guarantee (a claim not
//! yet durable could be lost with the server and its task run twice). What a commit costs
//! depends on the machine far more than on its size: on this machine class one row
//! committed every 20 ms took about ten times what it took back to back (pgbench: 1.5 ms
//! against 0.16 ms), as an idle disk and idle cores wake for each. So the scenario measures
//! this floor in the same run, after its own tasks and as far apart, and the queue's latency
//! can be read as what it adds above it.

use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};

type Error = Box<dyn std::error::Error>;

const INSERT: &str = "INSERT INTO bench_commit_floor (n) VALUES (1)";

/// Creates the table the floor's commits write to, in the scenario's database.
pub async fn prepare(db: &DatabaseConnection) -> Result<(), Error> {
    db.execute_unprepared("CREATE TABLE bench_commit_floor (n INTEGER NOT NULL)")
        .await?;
    Ok(())
}

/// One sample: a transaction with one row inserted is committed, as an enqueue is, and then
/// one more row is inserted in a statement committed on its own, as a claim is; the time
/// from just before the first COMMIT until the second statement returns.
pub async fn two_commits(db: &DatabaseConnection) -> Result<Duration, Error> {
    let enqueue_like = db.begin().await?;
    enqueue_like.execute_unprepared(INSERT).await?;
    let started = Instant::now();
    enqueue_like.commit().await?;
    db.execute_unprepared(INSERT).await?;
    Ok(started.elapsed())
}
