use caseload::entity::person;
use caseload::search::{PageRequest, PersonFilter, search_people};
use caseload::users::{NewStaffUser, Role, create_user};
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::{EntityTrait, Set};
use uuid::Uuid;

queue::backend_tests!(Migrator => filters_sort_and_pages, rejects_bad_page_sizes);

/// Inserts people with the given (first name, last name, status).
async fn people(db: &TestDatabase, rows: &[(&str, &str, &str)], coach: Option<Uuid>) {
    let models = rows
        .iter()
        .map(|(first, last, status)| person::ActiveModel {
            id: Set(Uuid::new_v4()),
            school_id: Set(format!("T-{last}-{first}")),
            first_name: Set((*first).into()),
            last_name: Set((*last).into()),
            email: Set(None),
            program_status: Set((*status).into()),
            coach_id: Set(coach),
            updated_by: Set(None),
            updated_at: Set(Utc::now()),
        });
    person::Entity::insert_many(models)
        .exec(&db.conn)
        .await
        .unwrap();
}

fn names(page: &caseload::search::PersonPage) -> Vec<String> {
    page.people
        .iter()
        .map(|p| format!("{} {}", p.first_name, p.last_name))
        .collect()
}

async fn filters_sort_and_pages(db: TestDatabase) {
    let coach = create_user(
        &db.conn,
        NewStaffUser {
            username: "coach".into(),
            display_name: "C".into(),
            role: Role::Staff,
            password: "password1".into(),
        },
    )
    .await
    .unwrap();
    people(
        &db,
        &[
            ("Ada", "Lovelace", "ACTIVE"),
            ("Alan", "Turing", "GRADUATED"),
            ("Grace", "Hopper", "ACTIVE"),
        ],
        None,
    )
    .await;
    people(
        &db,
        &[
            ("Ada", "Byron", "INACTIVE"),
            ("Hedy", "Lamarr", "ACTIVE"),
            ("50%", "O'Brien_x", "ACTIVE"),
        ],
        Some(coach.id),
    )
    .await;
    let all = PageRequest {
        page: 0,
        page_size: 50,
    };

    let everyone = search_people(&db.conn, &PersonFilter::default(), all)
        .await
        .unwrap();
    assert_eq!(everyone.total, 6);
    assert_eq!(
        names(&everyone),
        [
            "Ada Byron",
            "Grace Hopper",
            "Hedy Lamarr",
            "Ada Lovelace",
            "50% O'Brien_x",
            "Alan Turing"
        ]
    );

    // Name words are case-insensitive prefixes of first name, last name or school id.
    let by_name = |name: &str| PersonFilter {
        name: Some(name.into()),
        ..Default::default()
    };
    let ada = search_people(&db.conn, &by_name("ADA"), all).await.unwrap();
    assert_eq!(names(&ada), ["Ada Byron", "Ada Lovelace"]);
    let ada_l = search_people(&db.conn, &by_name("ada lov"), all)
        .await
        .unwrap();
    assert_eq!(names(&ada_l), ["Ada Lovelace"]);
    // LIKE wildcards in the input match literally.
    assert_eq!(
        search_people(&db.conn, &by_name("50%"), all)
            .await
            .unwrap()
            .total,
        1
    );
    assert_eq!(
        search_people(&db.conn, &by_name("%"), all)
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        search_people(&db.conn, &by_name("o'brien_"), all)
            .await
            .unwrap()
            .total,
        1
    );

    let active = PersonFilter {
        program_status: Some("ACTIVE".into()),
        ..Default::default()
    };
    assert_eq!(
        search_people(&db.conn, &active, all).await.unwrap().total,
        4
    );
    let mine = PersonFilter {
        coach_id: Some(coach.id),
        ..Default::default()
    };
    assert_eq!(
        names(&search_people(&db.conn, &mine, all).await.unwrap()),
        ["Ada Byron", "Hedy Lamarr", "50% O'Brien_x"]
    );

    // Pages partition the sorted result.
    let page = |n| PageRequest {
        page: n,
        page_size: 4,
    };
    let first = search_people(&db.conn, &PersonFilter::default(), page(0))
        .await
        .unwrap();
    let second = search_people(&db.conn, &PersonFilter::default(), page(1))
        .await
        .unwrap();
    assert_eq!(
        (first.people.len(), second.people.len(), second.total),
        (4, 2, 6)
    );
    assert_eq!([names(&first), names(&second)].concat(), names(&everyone));
    let beyond = search_people(&db.conn, &PersonFilter::default(), page(9))
        .await
        .unwrap();
    assert!(beyond.people.is_empty());
}

async fn rejects_bad_page_sizes(db: TestDatabase) {
    for page_size in [0, 201] {
        let result = search_people(
            &db.conn,
            &PersonFilter::default(),
            PageRequest { page: 0, page_size },
        )
        .await;
        assert!(
            matches!(result, Err(caseload::CaseloadError::Invalid(_))),
            "page_size {page_size}"
        );
    }
}
