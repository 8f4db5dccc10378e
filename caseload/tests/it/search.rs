use bulkq_types::filter::PersonFilter;
use bulkq_types::people::{PageRequest, PersonPage};
use caseload::access::Actor;
use caseload::search::{
    CandidatesAhead, WalkStep, count_people, people_after, people_after_reading_ahead,
    search_people,
};
use caseload::store::entity::person;
use caseload::users::{NewStaffUser, Role, create_user};
use caseload::watches::watch;
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

queue::backend_tests!(Migrator =>
    filters_sort_and_pages,
    text_searches_sort_and_page_every_match_once,
    rejects_bad_page_sizes,
    email_contains_and_watch_filters,
    keyset_walk_within_scope,
    candidates_read_ahead_are_tested_when_walked,
);

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

fn names(page: &PersonPage) -> Vec<String> {
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
            password: "a-test-password-1".into(),
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

/// Name and "contains" searches find their matches through other indexes than the table's
/// (a UNION over the name columns; SQLite's "contains" index): each match is listed once, in
/// name order, and pages split that order.
async fn text_searches_sort_and_page_every_match_once(db: TestDatabase) {
    people(
        &db,
        &[
            ("Ada", "Byron", "INACTIVE"),
            ("Ada", "Adams", "ACTIVE"),
            ("Adam", "Smith", "ACTIVE"),
            ("Grace", "Adair", "ACTIVE"),
            ("Zed", "Lovelace", "GRADUATED"),
        ],
        None,
    )
    .await;
    let all = PageRequest {
        page: 0,
        page_size: 50,
    };
    let find = |filter: PersonFilter| {
        let db = &db;
        async move { names(&search_people(&db.conn, &filter, all).await.unwrap()) }
    };
    let name = |name: &str, status: Option<&str>| PersonFilter {
        name: Some(name.into()),
        program_status: status.map(str::to_owned),
        ..Default::default()
    };
    // "Ada Adams" starts with "ad" twice and is listed once.
    assert_eq!(
        find(name("ad", None)).await,
        ["Grace Adair", "Ada Adams", "Ada Byron", "Adam Smith"]
    );
    assert_eq!(find(name("sm AD", None)).await, ["Adam Smith"]);
    // School ids are "T-<last>-<first>".
    assert_eq!(find(name("ada t-by", None)).await, ["Ada Byron"]);
    assert_eq!(
        find(name("ad", Some("ACTIVE"))).await,
        ["Grace Adair", "Ada Adams", "Adam Smith"]
    );

    let contains = PersonFilter {
        contains: Some("ADa".into()),
        ..Default::default()
    };
    let everyone = find(contains.clone()).await;
    assert_eq!(
        everyone,
        ["Grace Adair", "Ada Adams", "Ada Byron", "Adam Smith"]
    );
    let mut paged = Vec::new();
    for page in 0..2 {
        let request = PageRequest { page, page_size: 2 };
        let found = search_people(&db.conn, &contains, request).await.unwrap();
        assert_eq!(found.total, 4);
        paged.extend(names(&found));
    }
    assert_eq!(paged, everyone);
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

async fn search(db: &TestDatabase, filter: PersonFilter) -> PersonPage {
    let page = PageRequest {
        page: 0,
        page_size: 50,
    };
    search_people(&db.conn, &filter, page).await.unwrap()
}

async fn email_contains_and_watch_filters(db: TestDatabase) {
    let ids = crate::helpers::people(&db, "Zed", 3, None).await;
    people(
        &db,
        &[
            ("Ada", "Lovelace", "ACTIVE"),
            ("Grace", "OBrienson", "ACTIVE"),
        ],
        None,
    )
    .await;

    let by_email = search(
        &db,
        PersonFilter {
            email: Some("ZED1@".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(by_email.total, 1);
    assert!(by_email.total_is_exact);

    let contains = |text: &str| PersonFilter {
        contains: Some(text.into()),
        ..Default::default()
    };
    // Anywhere in first name, last name, school id or email, case-insensitively.
    assert_eq!(
        names(&search(&db, contains("brien")).await),
        ["Grace OBrienson"]
    );
    assert_eq!(search(&db, contains("ove")).await.total, 1);
    assert_eq!(search(&db, contains("@EXAMPLE.edu")).await.total, 3);
    assert_eq!(search(&db, contains("zed-2")).await.total, 1);
    assert_eq!(search(&db, contains("%%%")).await.total, 0);
    // The index follows changes to the searched columns.
    person::Entity::update_many()
        .col_expr(person::Column::LastName, Expr::value("Quux"))
        .filter(person::Column::Id.eq(ids[0]))
        .exec(&db.conn)
        .await
        .unwrap();
    assert_eq!(search(&db, contains("quux")).await.total, 1);
    assert_eq!(search(&db, contains("zedlast")).await.total, 2);
    // ... including the sort key it keeps: "Quux" now sorts before the other Zeds.
    let renamed_first = search(&db, contains("zed")).await.people[0].id;
    assert_eq!(renamed_first, ids[0]);
    // A page past the last match still says how many match.
    let past_end = search_people(
        &db.conn,
        &contains("zed"),
        PageRequest {
            page: 9,
            page_size: 50,
        },
    )
    .await
    .unwrap();
    assert!(past_end.people.is_empty());
    assert_eq!(past_end.total, search(&db, contains("zed")).await.total);
    assert!(past_end.total > 0);
    person::Entity::delete_by_id(ids[1])
        .exec(&db.conn)
        .await
        .unwrap();
    assert_eq!(search(&db, contains("zedlast")).await.total, 1);
    // Two characters narrow nothing down; they are refused rather than scanned.
    let short = search_people(
        &db.conn,
        &contains("ze"),
        PageRequest {
            page: 0,
            page_size: 50,
        },
    )
    .await;
    assert!(matches!(short, Err(caseload::CaseloadError::Invalid(_))));

    let actor = crate::helpers::actor(&db, "watcher", Role::Staff).await;
    watch(&db.conn, &actor, &ids, Utc::now()).await.unwrap();
    let watched = search(
        &db,
        PersonFilter {
            watched_by: Some(actor.id),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(watched.total, 2);

    // A saved query's JSON names only the filters it uses.
    let saved: PersonFilter = serde_json::from_str(r#"{"contains": "zed"}"#).unwrap();
    assert_eq!(saved, contains("zed"));
}

/// The walk bulk actions use: every matching person once, in id order, within the actor's
/// scope, resumable from any id.
async fn keyset_walk_within_scope(db: TestDatabase) {
    let actor = crate::helpers::actor(&db, "staff", Role::Staff).await;
    let colleague = crate::helpers::actor(&db, "colleague", Role::Staff).await;
    let mine = crate::helpers::people(&db, "mine", 25, Some(actor.id)).await;
    let free = crate::helpers::people(&db, "free", 5, None).await;
    crate::helpers::people(&db, "theirs", 10, Some(colleague.id)).await;
    let everyone = PersonFilter::default();
    assert_eq!(count_people(&db.conn, &everyone, &actor).await.unwrap(), 30);

    let mut expected = [mine.clone(), free.clone()].concat();
    expected.sort();
    assert_eq!(walk(&db, &everyone, &actor, 7).await, expected);

    // A name word: its candidates come from the name indexes, and those outside the scope
    // (a colleague's "First1") or the rest of the filter are passed over, not returned.
    let first_one = |name: &str| PersonFilter {
        name: Some(name.into()),
        ..Default::default()
    };
    // "First1", "First10" to "First19": 11 of mine, 1 unassigned, 1 of the colleague's.
    let mut expected = [&mine[1..2], &mine[10..20], &free[1..2]].concat();
    expected.sort();
    assert_eq!(walk(&db, &first_one("first1"), &actor, 2).await, expected);
    let mut expected = [&mine[1..2], &mine[10..20]].concat();
    expected.sort();
    assert_eq!(
        walk(&db, &first_one("first1 min"), &actor, 3).await,
        expected
    );
    // The watch list: one range of its primary key.
    let watched = PersonFilter {
        watched_by: Some(actor.id),
        ..Default::default()
    };
    watch(&db.conn, &actor, &mine[..9], Utc::now())
        .await
        .unwrap();
    assert_eq!(walk(&db, &watched, &actor, 4).await, mine[..9].to_vec());

    let only_free = PersonFilter {
        name: Some("free".into()),
        ..Default::default()
    };
    assert_eq!(count_people(&db.conn, &only_free, &actor).await.unwrap(), 5);
}

/// A walk that reads its candidates ahead tests each against the filter when its step runs
/// (someone renamed since the read is passed over), finds people added since the read (the
/// end is read afresh), and may go back to an earlier cursor (a batch rolled back).
async fn candidates_read_ahead_are_tested_when_walked(db: TestDatabase) {
    let actor = crate::helpers::actor(&db, "staff", Role::Staff).await;
    // "First0" to "First29", in id order.
    let mine = crate::helpers::people(&db, "mine", 30, Some(actor.id)).await;
    let filter = PersonFilter {
        name: Some("first".into()),
        ..Default::default()
    };
    let mut ahead = CandidatesAhead::reading(100);
    let step = walk_step(&db, &filter, &actor, None, &mut ahead).await;
    assert_eq!(people_of(&step), mine[..5]);

    // After the read: one person ahead no longer matches, one more does (added).
    person::Entity::update_many()
        .col_expr(person::Column::FirstName, Expr::value("Zed"))
        .filter(person::Column::Id.eq(mine[7]))
        .exec(&db.conn)
        .await
        .unwrap();
    let late = crate::helpers::people(&db, "late", 1, Some(actor.id)).await;

    let second = walk_step(&db, &filter, &actor, step.last_visited, &mut ahead).await;
    assert_eq!(people_of(&second), [mine[5], mine[6], mine[8], mine[9]]);

    // Back to an earlier cursor (a batch rolled back): the five candidates after it, the
    // renamed one passed over but visited.
    let again = walk_step(&db, &filter, &actor, Some(mine[2]), &mut ahead).await;
    assert_eq!(people_of(&again), mine[3..7]);
    assert_eq!(again.last_visited, Some(mine[7]));

    let mut seen = [people_of(&step), people_of(&second)].concat();
    let mut after = second.last_visited;
    loop {
        let step = walk_step(&db, &filter, &actor, after, &mut ahead).await;
        let Some(last) = step.last_visited else { break };
        seen.extend(people_of(&step));
        after = Some(last);
    }
    let expected: Vec<Uuid> = [&mine[..7], &mine[8..], &late[..]].concat();
    assert_eq!(seen, expected);
}

/// One step of five of a walk reading candidates `ahead`.
async fn walk_step(
    db: &TestDatabase,
    filter: &PersonFilter,
    actor: &Actor,
    after: Option<Uuid>,
    ahead: &mut CandidatesAhead,
) -> WalkStep {
    people_after_reading_ahead(&db.conn, filter, actor.scope(), after, 5, ahead)
        .await
        .unwrap()
}

fn people_of(step: &WalkStep) -> Vec<Uuid> {
    step.people.iter().map(|p| p.id).collect()
}

/// Every person a keyset walk of `filter` finds, in steps of at most `limit`.
async fn walk(db: &TestDatabase, filter: &PersonFilter, actor: &Actor, limit: u64) -> Vec<Uuid> {
    let (mut after, mut seen) = (None, Vec::new());
    loop {
        let step = people_after(&db.conn, filter, actor, after, limit)
            .await
            .unwrap();
        let Some(last) = step.last_visited else { break };
        assert!(step.people.len() as u64 <= limit);
        after = Some(last);
        seen.extend(step.people.iter().map(|p| p.id));
    }
    seen
}
