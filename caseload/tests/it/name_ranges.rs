//! Deep pages of one status, one coach's caseload, or both (SQLite: through counted name
//! ranges, ADR 0087; PostgreSQL: through the name-ordered indexes) stay the name order of
//! every person they list while ranges are cut and people arrive, leave, change status,
//! coach or name.

use bulkq_types::filter::PersonFilter;
use bulkq_types::people::PageRequest;
use caseload::name_ranges::cut_grown_ranges;
use caseload::search::search_people;
use caseload::store::entity::person;
use caseload::users::{NewStaffUser, Role, create_user};
use chrono::Utc;
use migration::{Migrator, MigratorTrait};
use queue::testing::{Backend, TestDatabase};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set, Statement};
use uuid::Uuid;

queue::backend_tests!(Migrator =>
    deep_pages_follow_name_order_as_people_change,
    an_existing_caseload_is_counted_by_the_migrations,
);

/// The status most pages are of.
const STATUS: &str = "GRADUATED";

/// People to cut ranges into, small so that a few thousand people make many ranges.
const RANGE: u64 = 100;

/// Two coaches, `A` and `B`.
async fn coaches(db: &TestDatabase) -> [Uuid; 2] {
    let mut ids = [Uuid::nil(); 2];
    for (id, name) in ids.iter_mut().zip(["a", "b"]) {
        *id = create_user(
            &db.conn,
            NewStaffUser {
                username: format!("coach-{name}"),
                display_name: name.into(),
                role: Role::Staff,
                password: "a-test-password-1".into(),
            },
        )
        .await
        .unwrap()
        .id;
    }
    ids
}

/// Adds `count` people of `status`, `namesakes` to a name (so that ranges start inside a
/// run of namesakes too), coached in turn by each of `coaches`.
async fn add_people(
    db: &TestDatabase,
    tag: &str,
    count: usize,
    status: &str,
    namesakes: usize,
    coaches: &[Option<Uuid>],
) {
    let rows: Vec<person::ActiveModel> = (0..count)
        .map(|n| person::ActiveModel {
            id: Set(Uuid::new_v4()),
            school_id: Set(format!("{tag}-{n}")),
            first_name: Set(format!("F{}", n / namesakes)),
            last_name: Set(format!("{tag}{}", n % 7)),
            email: Set(None),
            program_status: Set(status.into()),
            coach_id: Set(coaches[n % coaches.len()]),
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

/// The filters whose deep pages are checked: a status, a caseload, a caseload in a status.
fn filters(coach: Uuid) -> [PersonFilter; 3] {
    [
        PersonFilter {
            program_status: Some(STATUS.into()),
            ..PersonFilter::default()
        },
        PersonFilter {
            coach_id: Some(coach),
            ..PersonFilter::default()
        },
        PersonFilter {
            coach_id: Some(coach),
            program_status: Some(STATUS.into()),
            ..PersonFilter::default()
        },
    ]
}

/// Every person `filter` matches, in name order.
async fn in_name_order(db: &TestDatabase, filter: &PersonFilter) -> Vec<Uuid> {
    let mut keys: Vec<(String, String, Uuid)> = person::Entity::find()
        .all(&db.conn)
        .await
        .unwrap()
        .into_iter()
        .filter(|p| {
            filter
                .coach_id
                .is_none_or(|coach| p.coach_id == Some(coach))
        })
        .filter(|p| {
            filter
                .program_status
                .as_ref()
                .is_none_or(|status| p.program_status == *status)
        })
        .map(|p| (p.last_name, p.first_name, p.id))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, _, id)| id).collect()
}

/// Each filter's pages at offsets around the ranges' edges and through the end are those of
/// its people in name order; each matches more people than a page sorted after filtering.
async fn assert_pages(db: &TestDatabase, coach: Uuid) {
    for filter in filters(coach) {
        let expected = in_name_order(db, &filter).await;
        assert!(expected.len() > 2_000, "{} for {filter:?}", expected.len());
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
            assert_eq!(ids, want, "page {page} of {filter:?}");
        }
    }
}

/// Rows of three columns, sorted.
async fn rows<A, B>(db: &TestDatabase, sql: &str) -> Vec<(A, B, i64)>
where
    A: sea_orm::TryGetable + Ord,
    B: sea_orm::TryGetable + Ord,
{
    let statement = Statement::from_string(db.conn.get_database_backend(), sql.to_owned());
    let mut rows: Vec<(A, B, i64)> = db
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

/// The range of person `p`: the last one starting at or before their sort key.
const RANGE_OF_P: &str = "(SELECT range_no FROM person_name_range r \
     WHERE (r.last_name, r.first_name, r.id) <= (p.last_name, p.first_name, p.id) \
     ORDER BY r.last_name DESC, r.first_name DESC, r.id DESC LIMIT 1)";

/// SQLite: each range's count of each status and coach (or none) is the number of such
/// people whose sort key lies in it; answers how many ranges there are.
async fn assert_counts_hold(db: &TestDatabase) -> i64 {
    if db.backend != Backend::Sqlite {
        return 0;
    }
    let counted: Vec<(String, Vec<u8>, i64)> = rows(
        db,
        "SELECT program_status || ' ' || range_no, coach_key, people FROM person_range_count \
         WHERE people <> 0",
    )
    .await;
    let actual = rows(
        db,
        &format!(
            "SELECT program_status || ' ' || {RANGE_OF_P}, coalesce(coach_id, x''), COUNT(*) \
             FROM person p GROUP BY 1, 2"
        ),
    )
    .await;
    assert_eq!(counted, actual);
    db.scalar("SELECT COUNT(*) FROM person_name_range").await
}

async fn deep_pages_follow_name_order_as_people_change(db: TestDatabase) {
    let store = queue::Store::new(db.conn.clone());
    let [a, b] = coaches(&db).await;
    add_people(
        &db,
        "Grad",
        4_600,
        STATUS,
        3,
        &[Some(a), Some(b), Some(a), None],
    )
    .await;
    add_people(&db, "Active", 1_500, "ACTIVE", 1, &[Some(a), None]).await;
    let sqlite = i64::from(db.backend == Backend::Sqlite);
    assert_eq!(assert_counts_hold(&db).await, sqlite);
    assert_pages(&db, a).await;

    let cuts = cut_grown_ranges(&store, RANGE).await.unwrap();
    let ranges = assert_counts_hold(&db).await;
    if db.backend == Backend::Sqlite {
        assert!(cuts >= 6_100 / RANGE - 2, "{cuts} cuts");
        assert_eq!(ranges, cuts as i64 + 1);
        assert_eq!(cut_grown_ranges(&store, RANGE).await.unwrap(), 0);
    }
    assert_pages(&db, a).await;

    // Statuses change both ways, coaches change, names move people to other ranges, some
    // people leave and more arrive, all within the ranges as cut.
    let graduated = in_name_order(&db, &filters(a)[0]).await;
    let to_active: Vec<Uuid> = graduated.iter().step_by(5).copied().collect();
    let update =
        |column: person::Column, value: Expr| person::Entity::update_many().col_expr(column, value);
    update(person::Column::ProgramStatus, Expr::value("ACTIVE"))
        .filter(person::Column::Id.is_in(to_active))
        .exec(&db.conn)
        .await
        .unwrap();
    update(person::Column::ProgramStatus, Expr::value(STATUS))
        .filter(person::Column::LastName.eq("Active3"))
        .exec(&db.conn)
        .await
        .unwrap();
    update(person::Column::CoachId, Expr::value(a))
        .filter(person::Column::LastName.eq("Grad2"))
        .exec(&db.conn)
        .await
        .unwrap();
    update(person::Column::LastName, Expr::value("Aardvark"))
        .filter(person::Column::LastName.eq("Grad5"))
        .exec(&db.conn)
        .await
        .unwrap();
    person::Entity::delete_many()
        .filter(person::Column::LastName.eq("Grad1"))
        .exec(&db.conn)
        .await
        .unwrap();
    add_people(&db, "Late", 900, STATUS, 2, &[Some(a), Some(b)]).await;
    assert_counts_hold(&db).await;
    assert_pages(&db, a).await;

    cut_grown_ranges(&store, RANGE).await.unwrap();
    assert_counts_hold(&db).await;
    assert_pages(&db, a).await;
}

/// A caseload that exists before the ranges do is counted by the migrations (in range 0),
/// then cut by the job, and pages the same throughout.
async fn an_existing_caseload_is_counted_by_the_migrations(db: TestDatabase) {
    let [a, b] = coaches(&db).await;
    add_people(&db, "Grad", 4_400, STATUS, 4, &[Some(a), Some(b)]).await;
    add_people(&db, "Active", 800, "ACTIVE", 1, &[Some(a), None]).await;
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
    assert_pages(&db, a).await;
    cut_grown_ranges(&queue::Store::new(db.conn.clone()), RANGE)
        .await
        .unwrap();
    assert_counts_hold(&db).await;
    assert_pages(&db, a).await;
}
