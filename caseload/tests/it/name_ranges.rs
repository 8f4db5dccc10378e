//! Deep pages of one status (SQLite: through counted name ranges, ADR 0087; PostgreSQL:
//! through the status's name-ordered index) stay the name order of every person of that
//! status while ranges are cut and people arrive, leave, change status and change name.

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use caseload::name_ranges::cut_grown_ranges;
use caseload::search::search_people;
use caseload::store::entity::person;
use chrono::Utc;
use migration::{Migrator, MigratorTrait};
use queue::testing::{Backend, TestDatabase};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set, Statement};
use uuid::Uuid;

queue::backend_tests!(Migrator =>
    deep_status_pages_follow_name_order_as_people_change,
    an_existing_caseload_is_counted_by_the_migration,
);

/// The status the pages are of: more people than any page sorted after filtering.
const STATUS: &str = "GRADUATED";

/// People to cut ranges into, small so that a few thousand people make many ranges.
const RANGE: u64 = 100;

/// Adds `count` people of `status`, `namesakes` to a name, so that ranges start inside a
/// run of namesakes too.
async fn add_people(db: &TestDatabase, tag: &str, count: usize, status: &str, namesakes: usize) {
    let rows: Vec<person::ActiveModel> = (0..count)
        .map(|n| person::ActiveModel {
            id: Set(Uuid::new_v4()),
            school_id: Set(format!("{tag}-{n}")),
            first_name: Set(format!("F{}", n / namesakes)),
            last_name: Set(format!("{tag}{}", n % 7)),
            email: Set(None),
            program_status: Set(status.into()),
            coach_id: Set(None),
            updated_by: Set(None),
            updated_at: Set(Utc::now()),
        })
        .collect();
    for chunk in rows.chunks(500) {
        person::Entity::insert_many(chunk.to_vec())
            .exec(&db.conn)
            .await
            .unwrap();
    }
}

/// Every person of [`STATUS`], in name order.
async fn in_name_order(db: &TestDatabase) -> Vec<Uuid> {
    let mut keys: Vec<(String, String, Uuid)> = person::Entity::find()
        .filter(person::Column::ProgramStatus.eq(STATUS))
        .all(&db.conn)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.last_name, p.first_name, p.id))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, _, id)| id).collect()
}

/// Pages at offsets around the ranges' edges and through the end are those of `expected`.
async fn assert_pages(db: &TestDatabase, expected: &[Uuid]) {
    let filter = PersonFilter {
        program_status: Some(STATUS.into()),
        ..PersonFilter::default()
    };
    let page_size = 50;
    let last_page = expected.len() as u64 / page_size;
    for page in [0, 1, 2, 3, 10, 21, last_page - 1, last_page, last_page + 1] {
        let got = search_people(&db.conn, &filter, PageRequest { page, page_size })
            .await
            .unwrap();
        assert_eq!(got.total, expected.len() as u64);
        let want: Vec<Uuid> = expected
            .iter()
            .skip((page * page_size) as usize)
            .take(page_size as usize)
            .copied()
            .collect();
        let ids: Vec<Uuid> = got.people.iter().map(|p| p.id).collect();
        assert_eq!(ids, want, "page {page}");
    }
}

/// SQLite: each range's count of each status is the number of people of that status whose
/// sort key lies in it (the last range starting at or before the key); answers the ranges.
async fn assert_counts_hold(db: &TestDatabase) -> i64 {
    if db.backend != Backend::Sqlite {
        return 0;
    }
    let rows = |sql: &str| {
        let statement = Statement::from_string(db.conn.get_database_backend(), sql.to_owned());
        async move {
            let mut rows: Vec<(String, i64, i64)> = db
                .conn
                .query_all_raw(statement)
                .await
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row.try_get_by_index(0).unwrap(),
                        row.try_get_by_index(1).unwrap(),
                        row.try_get_by_index(2).unwrap(),
                    )
                })
                .collect();
            rows.sort();
            rows
        }
    };
    let counted =
        rows("SELECT program_status, range_no, people FROM person_status_range WHERE people <> 0")
            .await;
    let actual = rows(
        "SELECT program_status, (SELECT range_no FROM person_name_range r \
             WHERE (r.last_name, r.first_name, r.id) <= (p.last_name, p.first_name, p.id) \
             ORDER BY r.last_name DESC, r.first_name DESC, r.id DESC LIMIT 1) AS range_no, \
         COUNT(*) FROM person p GROUP BY 1, 2",
    )
    .await;
    assert_eq!(counted, actual);
    db.scalar("SELECT COUNT(*) FROM person_name_range").await
}

async fn deep_status_pages_follow_name_order_as_people_change(db: TestDatabase) {
    let store = queue::Store::new(db.conn.clone());
    add_people(&db, "Grad", 2_400, STATUS, 3).await;
    add_people(&db, "Active", 1_500, "ACTIVE", 1).await;
    assert_eq!(
        assert_counts_hold(&db).await,
        i64::from(db.backend == Backend::Sqlite)
    );
    assert_pages(&db, &in_name_order(&db).await).await;

    let cuts = cut_grown_ranges(&store, RANGE).await.unwrap();
    let ranges = assert_counts_hold(&db).await;
    if db.backend == Backend::Sqlite {
        assert!(cuts >= 3_900 / RANGE - 2, "{cuts} cuts");
        assert_eq!(ranges, cuts as i64 + 1);
        assert_eq!(cut_grown_ranges(&store, RANGE).await.unwrap(), 0);
    }
    assert_pages(&db, &in_name_order(&db).await).await;

    // Statuses change both ways, names move people to other ranges, some people leave and
    // more arrive, all within the ranges as cut.
    let expected = in_name_order(&db).await;
    let to_active: Vec<Uuid> = expected.iter().step_by(5).copied().collect();
    person::Entity::update_many()
        .col_expr(person::Column::ProgramStatus, Expr::value("ACTIVE"))
        .filter(person::Column::Id.is_in(to_active))
        .exec(&db.conn)
        .await
        .unwrap();
    person::Entity::update_many()
        .col_expr(person::Column::ProgramStatus, Expr::value(STATUS))
        .filter(person::Column::LastName.eq("Active3"))
        .exec(&db.conn)
        .await
        .unwrap();
    person::Entity::update_many()
        .col_expr(person::Column::LastName, Expr::value("Aardvark"))
        .filter(person::Column::LastName.eq("Grad5"))
        .exec(&db.conn)
        .await
        .unwrap();
    person::Entity::delete_many()
        .filter(person::Column::LastName.eq("Grad1"))
        .exec(&db.conn)
        .await
        .unwrap();
    add_people(&db, "Late", 900, STATUS, 2).await;
    assert_counts_hold(&db).await;
    assert_pages(&db, &in_name_order(&db).await).await;

    cut_grown_ranges(&store, RANGE).await.unwrap();
    assert_counts_hold(&db).await;
    assert_pages(&db, &in_name_order(&db).await).await;
}

/// A caseload that exists before the ranges do is counted in range 0 by the migration, then
/// cut by the job, and pages the same throughout.
async fn an_existing_caseload_is_counted_by_the_migration(db: TestDatabase) {
    add_people(&db, "Grad", 2_300, STATUS, 4).await;
    add_people(&db, "Active", 800, "ACTIVE", 1).await;
    let expected = in_name_order(&db).await;
    let migrations = Migrator::migrations();
    let since = migrations
        .iter()
        .position(|m| m.name() == "m20261209_001400_status_name_ranges")
        .expect("the name ranges' migration");
    let conn = queue::database::connect(&db.url, 1).await.unwrap();
    Migrator::down(&conn, Some((migrations.len() - since) as u32))
        .await
        .unwrap();
    Migrator::up(&conn, None).await.unwrap();
    conn.close().await.unwrap();

    assert_eq!(
        assert_counts_hold(&db).await,
        i64::from(db.backend == Backend::Sqlite)
    );
    assert_pages(&db, &expected).await;
    cut_grown_ranges(&queue::Store::new(db.conn.clone()), RANGE)
        .await
        .unwrap();
    assert_counts_hold(&db).await;
    assert_pages(&db, &expected).await;
}
