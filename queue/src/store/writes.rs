//! Who may write now: SQLite's one writer behind the in-process write gate (people ahead of
//! background work, ADRs 0009 and 0031), the queue's write transactions, and when a person
//! last wrote (ADR 0033). Shared by every clone of a store.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr};

use super::batch_budget::BatchPlace;
use super::people_writing::PeopleWriting;
use super::write_gate::{WriteClass, WriteGate, WritePass};

/// How long a SQLite writer waits for the store's write gate: as long as SQLite itself
/// would wait for the file lock (`database::connect` sets the same busy timeout), so a
/// transaction that waits on itself fails instead of hanging.
const WRITE_GATE_TIMEOUT: Duration = Duration::from_secs(30);

/// The write gate (SQLite only) and the record of people's writes.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// SQLite only: one write transaction of this store at a time.
    gate: Option<Arc<WriteGate>>,
    /// SQLite only: the one connection they all run on (`database::sqlite_writer`).
    writer: Option<DatabaseConnection>,
    people_writing: PeopleWriting,
}

impl Writes {
    /// Writes to `db`, a database that allows one writer at a time (SQLite): through a gate,
    /// on a connection of their own.
    pub(crate) fn single_writer(db: &DatabaseConnection) -> Self {
        Self {
            gate: Some(Arc::new(WriteGate::default())),
            writer: Some(crate::database::sqlite_writer(db)),
            people_writing: PeopleWriting::default(),
        }
    }

    /// A write transaction of `class`: on SQLite the gate's slot first, then `BEGIN
    /// IMMEDIATE` on the writer's connection; elsewhere a transaction on `db`.
    pub(crate) async fn begin(
        &self,
        db: &DatabaseConnection,
        class: WriteClass,
    ) -> Result<WriteTransaction, DbErr> {
        let gate = self.slot(class).await?;
        let txn = crate::database::begin_immediate(self.writer.as_ref().unwrap_or(db)).await?;
        Ok(WriteTransaction {
            txn,
            _gate: gate,
            _place: BatchPlace::default(),
        })
    }

    /// SQLite: runs `sql` on the writer's connection in a background turn at the gate, so
    /// between two write transactions and with none open. Nothing without a writer.
    pub(crate) async fn run_between_writes(&self, sql: &str) -> Result<(), DbErr> {
        let Some(writer) = &self.writer else {
            return Ok(());
        };
        let _turn = self.slot(WriteClass::Background).await?;
        writer.execute_unprepared(sql).await?;
        Ok(())
    }

    /// The gate's slot for one write of `class`; `None` without a gate.
    async fn slot(&self, class: WriteClass) -> Result<Option<WritePass>, DbErr> {
        self.people_writing.record(class);
        let Some(gate) = &self.gate else {
            return Ok(None);
        };
        tokio::time::timeout(WRITE_GATE_TIMEOUT, gate.enter(class))
            .await
            .map(Some)
            .map_err(|_| {
                DbErr::Custom(format!(
                    "no SQLite write slot within {WRITE_GATE_TIMEOUT:?} \
                     (is a write transaction of this store held elsewhere?)"
                ))
            })
    }

    /// Whether a person wrote within `window`, or submitted bulk work within
    /// `submission_window`.
    pub(crate) fn people_writing_within(
        &self,
        window: Duration,
        submission_window: Duration,
    ) -> bool {
        self.people_writing.within(window, submission_window)
    }

    /// Waits until the write transactions open or queued for the gate now have ended; at
    /// once without a gate.
    pub(crate) async fn own_writes_ended(&self) {
        if let Some(gate) = &self.gate {
            // Within a class the gate is first come, first served: this turn comes after
            // theirs (and after any person's), and is given back at once.
            drop(gate.enter(WriteClass::Background).await);
        }
    }
}

/// A write transaction of the queue (see `Store::begin_write`); derefs to the SeaORM
/// transaction. Dropping it without committing rolls back.
pub struct WriteTransaction {
    // Declared first so it is dropped (rolled back) before the gate opens.
    txn: DatabaseTransaction,
    _gate: Option<WritePass>,
    /// A batch's place in its node's budget, given back when the transaction ends.
    _place: BatchPlace,
}

impl WriteTransaction {
    /// This transaction, holding `place` until it ends.
    pub(crate) fn holding(self, place: BatchPlace) -> Self {
        WriteTransaction {
            _place: place,
            ..self
        }
    }

    pub async fn commit(self) -> Result<(), DbErr> {
        self.txn.commit().await
    }

    pub async fn rollback(self) -> Result<(), DbErr> {
        self.txn.rollback().await
    }
}

impl Deref for WriteTransaction {
    type Target = DatabaseTransaction;

    fn deref(&self) -> &DatabaseTransaction {
        &self.txn
    }
}
