//! SQLite only: the counted name ranges that find a deep page of one status (migration
//! `m20261209_001400`, ADR 0087), read for a page and cut smaller as people arrive.

use std::collections::BTreeMap;

use sea_orm::{ConnectionTrait, DbBackend, DbErr, Statement, Value};
use uuid::Uuid;

use crate::CaseloadError;

/// A sort key as the ranges store it: last name, first name and the id's bytes (range 0
/// starts at empty ones, below every person).
type SortKey = (String, String, Vec<u8>);

/// One page of the people of `status` in name order, `offset` people in.
///
/// The counts say in which range the offset falls and how many of the status's people that
/// range holds before it; the name index is then walked from the range's start, testing
/// each row's status, past those and through the page. One statement, so the counts and the
/// walk read the same snapshot. Past the last person the page is empty.
const STATUS_PAGE: &str = "\
    WITH start AS MATERIALIZED (\
        SELECT last_name, first_name, id, ? - (through - people) AS skip FROM (\
            SELECT r.last_name, r.first_name, r.id, c.people, \
                   SUM(c.people) OVER (ORDER BY r.last_name, r.first_name, r.id) AS through \
            FROM person_status_range c JOIN person_name_range r ON r.range_no = c.range_no \
            WHERE c.program_status = ? AND c.people > 0) \
        WHERE through > ? ORDER BY through LIMIT 1) \
    SELECT person.id FROM person INDEXED BY idx_person_name \
    WHERE (person.last_name, person.first_name, person.id) \
          >= (SELECT last_name, first_name, id FROM start) \
      AND +person.program_status = ? \
    ORDER BY person.last_name, person.first_name, person.id \
    LIMIT ? OFFSET coalesce((SELECT skip FROM start), 0)";

/// The ids of `limit` people of `status` in name order, `offset` people in.
pub(crate) async fn status_page<C: ConnectionTrait>(
    db: &C,
    status: &str,
    offset: u64,
    limit: u64,
) -> Result<Vec<Uuid>, CaseloadError> {
    let values: [Value; 5] = [
        offset.into(),
        status.into(),
        offset.into(),
        status.into(),
        limit.into(),
    ];
    let statement = Statement::from_sql_and_values(DbBackend::Sqlite, STATUS_PAGE, values);
    db.query_all_raw(statement)
        .await?
        .iter()
        .map(|row| Ok(row.try_get_by_index(0)?))
        .collect()
}

/// A range holding more than `people`, if any.
pub(crate) async fn holding_more_than<C: ConnectionTrait>(
    db: &C,
    people: u64,
) -> Result<Option<i64>, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT range_no FROM person_status_range \
         GROUP BY range_no HAVING SUM(people) > ? LIMIT 1",
        [people.into()],
    );
    Ok(match db.query_one_raw(statement).await? {
        Some(row) => Some(row.try_get_by_index(0)?),
        None => None,
    })
}

/// Cuts range `range_no` after its first `people` people: they stay in it, the rest form a
/// new range starting at the next one's sort key, and each status's count is divided
/// between the two. Answers the new range and how many it holds, or `None` when the range
/// holds no more than `people`.
pub(crate) async fn split<C: ConnectionTrait>(
    db: &C,
    range_no: i64,
    people: u64,
) -> Result<Option<(i64, u64)>, CaseloadError> {
    let start = range_start(db, range_no).await?;
    let walked = walk_from(db, &start, people + 1).await?;
    let Some((boundary, _)) = walked.get(usize::try_from(people).unwrap_or(usize::MAX)) else {
        return Ok(None);
    };
    if next_start(db, &start)
        .await?
        .is_some_and(|next| *boundary >= next)
    {
        return Ok(None);
    }
    let mut kept: BTreeMap<&str, i64> = BTreeMap::new();
    for (_, status) in &walked[..walked.len() - 1] {
        *kept.entry(status.as_str()).or_default() += 1;
    }
    let new_range = insert_start(db, boundary).await?;
    let mut moved = 0;
    for (status, counted) in counts_of(db, range_no).await? {
        let stays = kept.get(status.as_str()).copied().unwrap_or_default();
        set_count(db, &status, range_no, stays).await?;
        set_count(db, &status, new_range, counted - stays).await?;
        moved += counted - stays;
    }
    Ok(Some((new_range, u64::try_from(moved).unwrap_or_default())))
}

/// Where range `range_no` starts.
async fn range_start<C: ConnectionTrait>(db: &C, range_no: i64) -> Result<SortKey, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT last_name, first_name, id FROM person_name_range WHERE range_no = ?",
        [range_no.into()],
    );
    let row = db
        .query_one_raw(statement)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("name range {range_no}")))?;
    Ok((
        row.try_get_by_index(0)?,
        row.try_get_by_index(1)?,
        row.try_get_by_index(2)?,
    ))
}

/// Where the range after the one starting at `start` starts, if one does.
async fn next_start<C: ConnectionTrait>(
    db: &C,
    start: &SortKey,
) -> Result<Option<SortKey>, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT last_name, first_name, id FROM person_name_range \
         WHERE (last_name, first_name, id) > (?, ?, ?) \
         ORDER BY last_name, first_name, id LIMIT 1",
        key_values(start),
    );
    Ok(match db.query_one_raw(statement).await? {
        Some(row) => Some((
            row.try_get_by_index(0)?,
            row.try_get_by_index(1)?,
            row.try_get_by_index(2)?,
        )),
        None => None,
    })
}

/// The sort keys and statuses of the first `limit` people from `start` in name order.
async fn walk_from<C: ConnectionTrait>(
    db: &C,
    start: &SortKey,
    limit: u64,
) -> Result<Vec<(SortKey, String)>, CaseloadError> {
    let mut values = key_values(start).to_vec();
    values.push(limit.into());
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT last_name, first_name, id, program_status FROM person INDEXED BY idx_person_name \
         WHERE (last_name, first_name, id) >= (?, ?, ?) \
         ORDER BY last_name, first_name, id LIMIT ?",
        values,
    );
    db.query_all_raw(statement)
        .await?
        .iter()
        .map(|row| {
            let key = (
                row.try_get_by_index(0)?,
                row.try_get_by_index(1)?,
                row.try_get_by_index(2)?,
            );
            Ok((key, row.try_get_by_index(3)?))
        })
        .collect()
}

/// Adds a range starting at `start`; answers its number.
async fn insert_start<C: ConnectionTrait>(db: &C, start: &SortKey) -> Result<i64, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "INSERT INTO person_name_range (range_no, last_name, first_name, id) \
         SELECT MAX(range_no) + 1, ?, ?, ? FROM person_name_range RETURNING range_no",
        key_values(start),
    );
    let row = db
        .query_one_raw(statement)
        .await?
        .ok_or(DbErr::RecordNotInserted)?;
    Ok(row.try_get_by_index(0)?)
}

/// How many people of each status range `range_no` holds.
async fn counts_of<C: ConnectionTrait>(
    db: &C,
    range_no: i64,
) -> Result<Vec<(String, i64)>, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT program_status, people FROM person_status_range WHERE range_no = ?",
        [range_no.into()],
    );
    db.query_all_raw(statement)
        .await?
        .iter()
        .map(|row| Ok((row.try_get_by_index(0)?, row.try_get_by_index(1)?)))
        .collect()
}

/// Sets how many people of `status` range `range_no` holds.
async fn set_count<C: ConnectionTrait>(
    db: &C,
    status: &str,
    range_no: i64,
    people: i64,
) -> Result<(), CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "INSERT INTO person_status_range (program_status, range_no, people) VALUES (?, ?, ?) \
         ON CONFLICT (program_status, range_no) DO UPDATE SET people = excluded.people",
        [status.into(), range_no.into(), people.into()],
    );
    db.execute_raw(statement).await?;
    Ok(())
}

fn key_values((last_name, first_name, id): &SortKey) -> [Value; 3] {
    [
        last_name.as_str().into(),
        first_name.as_str().into(),
        id.clone().into(),
    ]
}
