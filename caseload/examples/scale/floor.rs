//! The plain-SQL floor of a bulk action: the same effect on the schema the floors were first
//! measured on ([`layout_before_name_ranges`]), written as a person would write it by hand
//! (batches of the engine's size by id, the same history row per changed person, one commit
//! per batch, the same durability), timed after the engine (a change's on a copy of the
//! database made just before the engine started), so the ratio says what the engine itself
//! costs beyond that schema's own price.

use std::time::Instant;

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, FromQueryResult,
    Statement, TransactionTrait, TryGetable, Value,
};
use uuid::Uuid;

type Error = Box<dyn std::error::Error>;

/// Rows per INSERT, as many as the engine's own statements hold.
const ROWS_PER_INSERT: usize = 500;

/// A copy of the database at `url`, as it is now, for a floor to change.
pub struct DatabaseCopy {
    pub url: String,
    /// PostgreSQL: the server's maintenance database and the copy's name, to drop it.
    postgres: Option<(String, String)>,
}

impl DatabaseCopy {
    /// Copies the database `db` (at `url`) page for page, as the engine will find it, and
    /// closes `db` (reconnect after): SQLite's file once its WAL is checkpointed into it
    /// (a `VACUUM INTO` would rebuild it compact, and sort every index in memory),
    /// PostgreSQL with `CREATE DATABASE … TEMPLATE`, which needs the original's sessions
    /// closed.
    pub async fn of(url: &str, db: DatabaseConnection) -> Result<Self, Error> {
        match db.get_database_backend() {
            DbBackend::Postgres => {
                db.close().await?;
                let (server, name) = url.rsplit_once('/').ok_or("no database name in the URL")?;
                let name = name.split('?').next().unwrap_or(name);
                let copy = format!("{name}_floor");
                let maintenance = format!("{server}/postgres");
                let admin = sea_orm::Database::connect(&maintenance).await?;
                admin
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS {copy}"))
                    .await?;
                admin
                    .execute_unprepared(&format!("CREATE DATABASE {copy} TEMPLATE {name}"))
                    .await?;
                admin.close().await?;
                Ok(DatabaseCopy {
                    url: format!("{server}/{copy}"),
                    postgres: Some((maintenance, copy)),
                })
            }
            _ => {
                let path = sqlite_path(url).ok_or("not a sqlite:// URL")?;
                let copy = format!("{path}.floor");
                db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)")
                    .await?;
                db.close().await?;
                std::fs::copy(path, &copy)?;
                Ok(DatabaseCopy {
                    url: format!("sqlite://{copy}?mode=rwc"),
                    postgres: None,
                })
            }
        }
    }

    /// Deletes the copy.
    pub async fn drop(self) -> Result<(), Error> {
        match self.postgres {
            Some((maintenance, copy)) => {
                let admin = sea_orm::Database::connect(&maintenance).await?;
                admin
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS {copy} WITH (FORCE)"))
                    .await?;
                admin.close().await?;
            }
            None => {
                let path = sqlite_path(&self.url).unwrap_or_default();
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{path}{suffix}"));
                }
            }
        }
        Ok(())
    }
}

/// The file of a `sqlite://PATH?…` URL.
fn sqlite_path(url: &str) -> Option<&str> {
    url.strip_prefix("sqlite://")?.split('?').next()
}

/// One connection to the database at `url`, with the settings a node's writer has (on
/// SQLite, its larger page cache): the floor writes as the engine's batches do.
pub async fn connect(url: &str) -> Result<DatabaseConnection, Error> {
    let db = queue::database::connect(url, 1).await?;
    if db.get_database_backend() == DbBackend::Sqlite {
        db.execute_unprepared("PRAGMA cache_size = -16384").await?;
    }
    Ok(db)
}

/// Gives a SQLite copy the layout the floors were first measured on: the status's and the
/// coaches' name-ordered indexes back, and no counted name ranges kept by triggers
/// (migrations `m20261209_001400` and `…_001500` undone where they matter to a write; ADR
/// 0087). Untimed.
pub async fn layout_before_name_ranges(db: &DatabaseConnection) -> Result<(), Error> {
    if db.get_database_backend() != DbBackend::Sqlite {
        return Ok(());
    }
    for trigger in ["insert", "delete", "update"] {
        db.execute_unprepared(&format!("DROP TRIGGER person_range_count_{trigger}"))
            .await?;
    }
    for (index, column) in [
        ("idx_person_status_name", "program_status"),
        ("idx_person_coach_name", "coach_id"),
    ] {
        db.execute_unprepared(&format!(
            "CREATE INDEX {index} ON person ({column}, last_name, first_name, id)"
        ))
        .await?;
    }
    db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)")
        .await?;
    Ok(())
}

/// What a floor did and how long it took.
pub struct Floor {
    pub seconds: f64,
    /// People changed or alerted, or rows exported.
    pub changed: u64,
}

/// A change of one column of `person` for everyone, with a history row per person moved:
/// what the status change and the coach reassignment do.
pub struct ColumnChange<T> {
    /// The `person` column changed.
    pub column: &'static str,
    /// Its new value.
    pub to: T,
    /// The history table and its columns, in the order its rows are written: id, person,
    /// from, to, then `history_extra`'s, then who, when and the task.
    pub history_table: &'static str,
    pub history_columns: &'static [&'static str],
    pub history_extra: Vec<Value>,
}

/// One person's id and the value of one of their columns.
struct Current<T> {
    id: Uuid,
    value: T,
}

/// `$n` or `?n`: the statement's parameter number `n`.
fn mark(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => format!("?{n}"),
    }
}

/// The `n`th parameter where all are bound in order: SQLite's bare `?`, since binding
/// each of its numbered ones (`?n`) looks the number up in a list of all of them, a cost
/// that grows with the square of the statement's parameters (18 % of a status change's
/// floor at 800 a statement).
fn in_order(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${n}"),
        _ => "?".to_owned(),
    }
}

/// `IN` the id list bound as parameter `n` ([`id_list`]): a PostgreSQL array, or SQLite's
/// JSON array of hex ids.
fn in_id_list(backend: DbBackend, n: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("= ANY(${n})"),
        _ => format!("IN (SELECT unhex(value) FROM json_each(?{n}))"),
    }
}

/// `ids` as the parameter [`in_id_list`] reads.
fn id_list(backend: DbBackend, ids: Vec<Uuid>) -> Result<Value, Error> {
    Ok(match backend {
        DbBackend::Postgres => ids.into(),
        _ => serde_json::to_string(
            &ids.iter()
                .map(|id| id.simple().to_string())
                .collect::<Vec<_>>(),
        )?
        .into(),
    })
}

/// Up to `batch` people after `after` by id, each with their `column`; on PostgreSQL
/// locked for update when `lock` (SQLite's one writer needs no lock).
async fn read_batch<T: TryGetable>(
    txn: &DatabaseTransaction,
    column: &str,
    lock: bool,
    after: Uuid,
    batch: u64,
) -> Result<Vec<Current<T>>, Error> {
    let backend = txn.get_database_backend();
    let lock = if lock && backend == DbBackend::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    let read = format!(
        "SELECT id, {column} FROM person WHERE id > {} ORDER BY id LIMIT {}{lock}",
        mark(backend, 1),
        mark(backend, 2)
    );
    Ok(txn
        .query_all_raw(Statement::from_sql_and_values(
            backend,
            read,
            [after.into(), (batch as i64).into()],
        ))
        .await?
        .iter()
        .map(|row| {
            Ok(Current {
                id: row.try_get_by_index(0)?,
                value: row.try_get_by_index(1)?,
            })
        })
        .collect::<Result<_, sea_orm::DbErr>>()?)
}

/// Inserts `rows` (each the values of `columns`) into `table`, [`ROWS_PER_INSERT`] a
/// statement.
async fn insert_rows(
    txn: &DatabaseTransaction,
    table: &str,
    columns: &[&str],
    rows: Vec<Vec<Value>>,
) -> Result<(), Error> {
    let backend = txn.get_database_backend();
    let per_row = columns.len();
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let marks: Vec<String> = (0..chunk.len())
            .map(|row| {
                let marks: Vec<String> = (1..=per_row)
                    .map(|n| in_order(backend, row * per_row + n))
                    .collect();
                format!("({})", marks.join(", "))
            })
            .collect();
        let insert = format!(
            "INSERT INTO {table} ({}) VALUES {}",
            columns.join(", "),
            marks.join(", ")
        );
        let values: Vec<Value> = chunk.iter().flatten().cloned().collect();
        txn.execute_raw(Statement::from_sql_and_values(backend, insert, values))
            .await?;
    }
    Ok(())
}

/// `change` applied to everyone, as `actor`: per batch of `batch` people by id, one
/// transaction that reads and locks them, inserts a history row for each who moves, and
/// updates those people.
pub async fn column_change<T>(
    db: &DatabaseConnection,
    change: &ColumnChange<T>,
    actor: Uuid,
    batch: u64,
) -> Result<Floor, Error>
where
    T: TryGetable + Into<Value> + Clone + PartialEq,
{
    let backend = db.get_database_backend();
    let update = format!(
        "UPDATE person SET {} = {}, updated_by = {}, updated_at = {} WHERE id {}",
        change.column,
        mark(backend, 1),
        mark(backend, 2),
        mark(backend, 3),
        in_id_list(backend, 4)
    );
    let task_id = Uuid::now_v7();
    let started = Instant::now();
    let mut changed = 0;
    let mut after = Uuid::nil();
    loop {
        let txn = db.begin().await?;
        let people: Vec<Current<T>> = read_batch(&txn, change.column, true, after, batch).await?;
        let Some(last) = people.last() else { break };
        after = last.id;
        let moving: Vec<&Current<T>> = people.iter().filter(|p| p.value != change.to).collect();
        let now = chrono::Utc::now();
        let history = moving
            .iter()
            .map(|person| {
                let mut row: Vec<Value> = vec![
                    Uuid::now_v7().into(),
                    person.id.into(),
                    person.value.clone().into(),
                    change.to.clone().into(),
                ];
                row.extend(change.history_extra.iter().cloned());
                row.extend([actor.into(), now.into(), task_id.into()]);
                row
            })
            .collect();
        insert_rows(&txn, change.history_table, change.history_columns, history).await?;
        if !moving.is_empty() {
            let ids: Vec<Uuid> = moving.iter().map(|p| p.id).collect();
            let ids = id_list(backend, ids)?;
            txn.execute_raw(Statement::from_sql_and_values(
                backend,
                &update,
                [change.to.clone().into(), actor.into(), now.into(), ids],
            ))
            .await?;
        }
        txn.commit().await?;
        changed += moving.len() as u64;
    }
    Ok(Floor {
        seconds: started.elapsed().as_secs_f64(),
        changed,
    })
}

/// An early alert for everyone, as `actor`: per batch of `batch` people by id, one
/// transaction that reads them with their coach and inserts an `early_alert` row each (the
/// engine then tells each coach once, twenty rows at a million people: left out).
pub async fn early_alert(
    db: &DatabaseConnection,
    course: &str,
    reasons: &str,
    actor: Uuid,
    batch: u64,
) -> Result<Floor, Error> {
    let task_id = Uuid::now_v7();
    let started = Instant::now();
    let mut raised = 0;
    let mut after = Uuid::nil();
    loop {
        let txn = db.begin().await?;
        let people: Vec<Current<Option<Uuid>>> =
            read_batch(&txn, "coach_id", false, after, batch).await?;
        let Some(last) = people.last() else { break };
        after = last.id;
        let now = chrono::Utc::now();
        let rows = people
            .iter()
            .map(|person| {
                vec![
                    Uuid::now_v7().into(),
                    person.id.into(),
                    task_id.into(),
                    person.value.into(),
                    course.into(),
                    reasons.into(),
                    "".into(),
                    "".into(),
                    actor.into(),
                    now.into(),
                ]
            })
            .collect();
        insert_rows(
            &txn,
            "early_alert",
            &[
                "id",
                "person_id",
                "task_id",
                "coach_id",
                "course",
                "reasons",
                "suggestion",
                "comment",
                "raised_by",
                "raised_at",
            ],
            rows,
        )
        .await?;
        txn.commit().await?;
        raised += people.len() as u64;
    }
    Ok(Floor {
        seconds: started.elapsed().as_secs_f64(),
        changed: raised,
    })
}

/// A Watch by `watcher` of everyone a name search for `word` finds (a first name, last name
/// or school id starting with it): their ids in one `SELECT` (an OR of the three prefix
/// ranges, which the name indexes serve), then a `person_watch` row each, `batch` rows to a
/// transaction.
pub async fn watch(
    db: &DatabaseConnection,
    word: &str,
    watcher: Uuid,
    batch: u64,
) -> Result<Floor, Error> {
    let backend = db.get_database_backend();
    let collate = match backend {
        DbBackend::Postgres => " COLLATE \"C\"",
        _ => "",
    };
    let ranges: Vec<String> = ["first_name", "last_name", "school_id"]
        .iter()
        .map(|column| {
            format!(
                "(lower({column}){collate} >= {} AND lower({column}){collate} < {})",
                mark(backend, 1),
                mark(backend, 2)
            )
        })
        .collect();
    let low = word.to_lowercase();
    let mut high = low.clone();
    let last = high.pop().ok_or("an empty word")?;
    high.push(char::from_u32(u32::from(last) + 1).ok_or("no next character")?);
    let select = Statement::from_sql_and_values(
        backend,
        format!(
            "SELECT id FROM person WHERE {} ORDER BY id",
            ranges.join(" OR ")
        ),
        [low.into(), high.into()],
    );
    let started = Instant::now();
    let mut ids = Vec::new();
    for row in db.query_all_raw(select).await? {
        ids.push(row.try_get_by_index::<Uuid>(0)?);
    }
    for chunk in ids.chunks(usize::try_from(batch)?) {
        let txn = db.begin().await?;
        let now = chrono::Utc::now();
        let rows = chunk
            .iter()
            .map(|id| vec![watcher.into(), (*id).into(), now.into()])
            .collect();
        insert_rows(
            &txn,
            "person_watch",
            &["staff_user_id", "person_id", "created_at"],
            rows,
        )
        .await?;
        txn.commit().await?;
    }
    Ok(Floor {
        seconds: started.elapsed().as_secs_f64(),
        changed: ids.len() as u64,
    })
}

/// Email to everyone in program status `status` with an address, through `mailer`: per
/// batch of the engine's email batch size by id, one transaction that reads them and
/// claims a `sending` row each in the send log, then the messages (as many in flight as
/// the engine keeps), then one transaction that marks the sent ones `sent`.
pub async fn email(
    db: &DatabaseConnection,
    mailer: &caseload::email::Mailer,
    status: &str,
    content: &caseload::email::EmailContent,
) -> Result<Floor, Error> {
    use caseload::actions::{EMAIL_BATCH_MAX, EMAIL_SENDS_IN_FLIGHT};
    use futures_util::StreamExt;

    let backend = db.get_database_backend();
    // On SQLite, `+` keeps the planner on the primary key: through the status index it
    // sorted all of a status's people for every batch.
    let select = format!(
        "SELECT id, email FROM person WHERE {}program_status = {} AND email IS NOT NULL \
         AND id > {} ORDER BY id LIMIT {}",
        if backend == DbBackend::Sqlite {
            "+"
        } else {
            ""
        },
        mark(backend, 1),
        mark(backend, 2),
        mark(backend, 3)
    );
    let mark_sent = format!(
        "UPDATE email_send_log SET status = 'sent', sent_at = {0}, updated_at = {0} \
         WHERE task_id = {1} AND person_id {2}",
        mark(backend, 1),
        mark(backend, 2),
        in_id_list(backend, 3)
    );
    let task_id = Uuid::now_v7();
    let started = Instant::now();
    let mut sent = 0;
    let mut after = Uuid::nil();
    loop {
        let txn = db.begin().await?;
        let mut people: Vec<(Uuid, String)> = Vec::new();
        let values: [Value; 3] = [
            status.into(),
            after.into(),
            i64::try_from(EMAIL_BATCH_MAX)?.into(),
        ];
        for row in txn
            .query_all_raw(Statement::from_sql_and_values(backend, &select, values))
            .await?
        {
            people.push((row.try_get_by_index(0)?, row.try_get_by_index(1)?));
        }
        let Some((last, _)) = people.last() else {
            break;
        };
        after = *last;
        let now = chrono::Utc::now();
        let claims = people
            .iter()
            .map(|(id, address)| {
                let detail: Option<String> = None;
                let sent_at: Option<chrono::DateTime<chrono::Utc>> = None;
                vec![
                    task_id.into(),
                    (*id).into(),
                    address.clone().into(),
                    "sending".into(),
                    detail.into(),
                    1.into(),
                    now.into(),
                    sent_at.into(),
                ]
            })
            .collect();
        let columns = [
            "task_id",
            "person_id",
            "recipient",
            "status",
            "detail",
            "attempts",
            "updated_at",
            "sent_at",
        ];
        insert_rows(&txn, "email_send_log", &columns, claims).await?;
        txn.commit().await?;
        let deliveries: Vec<_> = futures_util::stream::iter(&people)
            .map(|(id, address)| async move {
                let delivery = mailer.send_to("", address, content).await;
                (*id, matches!(delivery, caseload::email::Delivery::Sent))
            })
            .buffered(EMAIL_SENDS_IN_FLIGHT)
            .collect()
            .await;
        let delivered: Vec<Uuid> = deliveries
            .into_iter()
            .filter_map(|(id, sent)| sent.then_some(id))
            .collect();
        sent += delivered.len() as u64;
        let ids = id_list(backend, delivered)?;
        let txn = db.begin().await?;
        let values: [Value; 3] = [chrono::Utc::now().into(), task_id.into(), ids];
        txn.execute_raw(Statement::from_sql_and_values(backend, &mark_sent, values))
            .await?;
        txn.commit().await?;
    }
    Ok(Floor {
        seconds: started.elapsed().as_secs_f64(),
        changed: sent,
    })
}

/// One exported row: the export's eight columns.
#[derive(FromQueryResult)]
struct ExportRow {
    id: Uuid,
    school_id: String,
    first_name: String,
    last_name: String,
    email: Option<String>,
    program_status: String,
    coach_id: Option<Uuid>,
    updated_at: chrono::DateTime<chrono::Utc>,
}

/// Everyone's eight export columns, one `SELECT` in id order streamed into a CSV file at
/// `path` (synced at the end, as the export syncs its file).
pub async fn export(db: &DatabaseConnection, path: &std::path::Path) -> Result<Floor, Error> {
    use futures_util::TryStreamExt;

    let started = Instant::now();
    let mut file = csv::Writer::from_writer(std::io::BufWriter::new(std::fs::File::create(path)?));
    file.write_record([
        "id",
        "school_id",
        "first_name",
        "last_name",
        "email",
        "program_status",
        "coach_id",
        "updated_at",
    ])?;
    let select = Statement::from_string(
        db.get_database_backend(),
        "SELECT id, school_id, first_name, last_name, email, program_status, coach_id, \
         updated_at FROM person ORDER BY id",
    );
    let mut rows = ExportRow::find_by_statement(select).stream(db).await?;
    let mut written = 0;
    while let Some(row) = rows.try_next().await? {
        file.write_record([
            row.id.to_string(),
            row.school_id,
            row.first_name,
            row.last_name,
            row.email.unwrap_or_default(),
            row.program_status,
            row.coach_id.map(|id| id.to_string()).unwrap_or_default(),
            row.updated_at.to_rfc3339(),
        ])?;
        written += 1;
    }
    let file = file.into_inner().map_err(|e| e.to_string())?;
    file.into_inner().map_err(|e| e.to_string())?.sync_all()?;
    Ok(Floor {
        seconds: started.elapsed().as_secs_f64(),
        changed: written,
    })
}
