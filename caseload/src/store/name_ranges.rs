//! SQLite only: the counted name ranges that find a deep page of one status or one coach's
//! caseload (migrations `m20261209_001400` and `…_001500`, ADR 0087), read for a page and
//! cut smaller as people arrive.

use bulkq_types::filter::PersonFilter;
use sea_orm::{ConnectionTrait, DbBackend, DbErr, QueryResult, Statement, Value};
use uuid::Uuid;

use crate::CaseloadError;
use crate::search::planner::FilterShape;

/// A sort key as the ranges store it: last name, first name and the id's bytes (range 0
/// starts at empty ones, below every person).
type SortKey = (String, String, Vec<u8>);

/// Whose people a page found through the ranges lists.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RangedFilter<'a> {
    Status(&'a str),
    Coach(Uuid),
    CoachInStatus(Uuid, &'a str),
}

impl<'a> RangedFilter<'a> {
    /// The ranged filter of a status and/or coach filter (the planner's
    /// `only_status_or_coach`), `None` for any other.
    pub(crate) fn of(filter: &'a PersonFilter) -> Option<Self> {
        if !filter.only_status_or_coach() {
            return None;
        }
        match (filter.coach_id, filter.program_status.as_deref()) {
            (Some(coach), Some(status)) => Some(RangedFilter::CoachInStatus(coach, status)),
            (Some(coach), None) => Some(RangedFilter::Coach(coach)),
            (None, Some(status)) => Some(RangedFilter::Status(status)),
            (None, None) => None,
        }
    }

    /// How many of its people each range holds (`range_no`, `people`), and the values bound.
    fn counts(self) -> (&'static str, Vec<Value>) {
        match self {
            RangedFilter::Status(status) => (
                "SELECT range_no, SUM(people) AS people FROM person_range_count \
                 WHERE program_status = ? GROUP BY range_no",
                vec![status.into()],
            ),
            RangedFilter::Coach(coach) => (
                "SELECT range_no, SUM(people) AS people FROM person_range_count \
                 WHERE coach_key = ? GROUP BY range_no",
                vec![coach.into()],
            ),
            RangedFilter::CoachInStatus(coach, status) => (
                "SELECT range_no, people FROM person_range_count \
                 WHERE coach_key = ? AND program_status = ?",
                vec![coach.into(), status.into()],
            ),
        }
    }

    /// The test of each `person` row walked, kept off every index but the name's (`+`), and
    /// the values bound.
    fn test(self) -> (&'static str, Vec<Value>) {
        match self {
            RangedFilter::Status(status) => ("+person.program_status = ?", vec![status.into()]),
            RangedFilter::Coach(coach) => ("+person.coach_id = ?", vec![coach.into()]),
            RangedFilter::CoachInStatus(coach, status) => (
                "+person.coach_id = ? AND +person.program_status = ?",
                vec![coach.into(), status.into()],
            ),
        }
    }
}

/// The ids of `limit` people of `filter` in name order, `offset` people in.
///
/// The counts say in which range the offset falls and how many of the filter's people that
/// range holds before it; the name index is then walked from the range's start, testing
/// each row, past those and through the page. One statement, so the counts and the walk
/// read the same snapshot. Past the last person the page is empty.
pub(crate) async fn page<C: ConnectionTrait>(
    db: &C,
    filter: RangedFilter<'_>,
    offset: u64,
    limit: u64,
) -> Result<Vec<Uuid>, CaseloadError> {
    let (counts, mut values) = filter.counts();
    let (test, test_values) = filter.test();
    let sql = format!(
        "WITH counts AS ({counts}), \
         start AS MATERIALIZED (\
             SELECT last_name, first_name, id, ? - (through - people) AS skip FROM (\
                 SELECT r.last_name, r.first_name, r.id, c.people, \
                        SUM(c.people) OVER (ORDER BY r.last_name, r.first_name, r.id) AS through \
                 FROM counts c JOIN person_name_range r ON r.range_no = c.range_no \
                 WHERE c.people > 0) \
             WHERE through > ? ORDER BY through LIMIT 1) \
         SELECT person.id FROM person INDEXED BY idx_person_name \
         WHERE (person.last_name, person.first_name, person.id) \
               >= (SELECT last_name, first_name, id FROM start) \
           AND {test} \
         ORDER BY person.last_name, person.first_name, person.id \
         LIMIT ? OFFSET coalesce((SELECT skip FROM start), 0)"
    );
    values.extend([offset.into(), offset.into()]);
    values.extend(test_values);
    values.push(limit.into());
    let statement = Statement::from_sql_and_values(DbBackend::Sqlite, sql, values);
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
        "SELECT range_no FROM person_range_count \
         GROUP BY range_no HAVING SUM(people) > ? LIMIT 1",
        [people.into()],
    );
    Ok(match db.query_one_raw(statement).await? {
        Some(row) => Some(row.try_get_by_index(0)?),
        None => None,
    })
}

/// Cuts range `range_no` after its first `people` people: they stay in it, the rest form a
/// new range starting at the next one's sort key, and its counts are divided between the
/// two. Answers the new range and how many it holds, or `None` when the range
/// holds no more than `people`.
pub(crate) async fn split<C: ConnectionTrait>(
    db: &C,
    range_no: i64,
    people: u64,
) -> Result<Option<(i64, u64)>, CaseloadError> {
    let start = range_start(db, range_no).await?;
    let Some(boundary) = key_after(db, &start, people).await? else {
        return Ok(None);
    };
    if next_start(db, &start)
        .await?
        .is_some_and(|next| boundary >= next)
    {
        return Ok(None);
    }
    let new_range = insert_start(db, &boundary).await?;
    divide(db, range_no, new_range, &start, &boundary).await?;
    Ok(Some((new_range, people_in(db, new_range).await?)))
}

/// Divides the counts of range `from` between it and `to`, which starts at `boundary`: all
/// of them move to `to`, those of the people from `start` to `boundary` are counted again
/// for `from`, and taken off `to`. Four statements, whatever the number of coaches.
async fn divide<C: ConnectionTrait>(
    db: &C,
    from: i64,
    to: i64,
    start: &SortKey,
    boundary: &SortKey,
) -> Result<(), CaseloadError> {
    let mut recount = vec![from.into()];
    recount.extend(key_values(start));
    recount.extend(key_values(boundary));
    let statements: [(&str, Vec<Value>); 4] = [
        (
            "UPDATE person_range_count SET range_no = ? WHERE range_no = ?",
            vec![to.into(), from.into()],
        ),
        (
            "INSERT INTO person_range_count (program_status, coach_key, range_no, people) \
             SELECT program_status, coalesce(coach_id, x''), ?, COUNT(*) \
             FROM person INDEXED BY idx_person_name \
             WHERE (last_name, first_name, id) >= (?, ?, ?) \
               AND (last_name, first_name, id) < (?, ?, ?) \
             GROUP BY 1, 2",
            recount,
        ),
        (
            "UPDATE person_range_count AS moved SET people = moved.people - kept.people \
             FROM person_range_count AS kept \
             WHERE kept.range_no = ? AND moved.range_no = ? \
               AND moved.program_status = kept.program_status \
               AND moved.coach_key = kept.coach_key",
            vec![from.into(), to.into()],
        ),
        (
            "DELETE FROM person_range_count WHERE range_no = ? AND people = 0",
            vec![to.into()],
        ),
    ];
    for (sql, values) in statements {
        db.execute_raw(Statement::from_sql_and_values(
            DbBackend::Sqlite,
            sql,
            values,
        ))
        .await?;
    }
    Ok(())
}

/// How many people range `range_no` holds.
async fn people_in<C: ConnectionTrait>(db: &C, range_no: i64) -> Result<u64, CaseloadError> {
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT COALESCE(SUM(people), 0) FROM person_range_count WHERE range_no = ?",
        [range_no.into()],
    );
    let held: i64 = match db.query_one_raw(statement).await? {
        Some(row) => row.try_get_by_index(0)?,
        None => 0,
    };
    Ok(u64::try_from(held).unwrap_or_default())
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
    key_of(row)
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
    db.query_one_raw(statement).await?.map(key_of).transpose()
}

/// The sort key of the person `skip` people after `start` in name order, if there is one.
async fn key_after<C: ConnectionTrait>(
    db: &C,
    start: &SortKey,
    skip: u64,
) -> Result<Option<SortKey>, CaseloadError> {
    let mut values = key_values(start).to_vec();
    values.push(skip.into());
    let statement = Statement::from_sql_and_values(
        DbBackend::Sqlite,
        "SELECT last_name, first_name, id FROM person INDEXED BY idx_person_name \
         WHERE (last_name, first_name, id) >= (?, ?, ?) \
         ORDER BY last_name, first_name, id LIMIT 1 OFFSET ?",
        values,
    );
    db.query_one_raw(statement).await?.map(key_of).transpose()
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

/// A sort key from the first three columns of `row`.
fn key_of(row: QueryResult) -> Result<SortKey, CaseloadError> {
    Ok((
        row.try_get_by_index(0)?,
        row.try_get_by_index(1)?,
        row.try_get_by_index(2)?,
    ))
}

/// A sort key as the values bound for `(?, ?, ?)`.
fn key_values((last_name, first_name, id): &SortKey) -> [Value; 3] {
    [
        last_name.as_str().into(),
        first_name.as_str().into(),
        id.clone().into(),
    ]
}
