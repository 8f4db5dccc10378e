//! Each person's outcome in each bulk task: recorded by the batches (changed, unchanged,
//! out of scope, unknown, no email address), downloaded as CSV by whoever may see the
//! task, the key of a search by person, and forgotten once the task is pruned.

use std::collections::BTreeMap;

use axum::http::{StatusCode, header};
use caseload::testing::insert_people;
use caseload::users::Role;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    every_person_targeted_has_an_outcome_found_by_person,
    the_tasks_touching_a_person_are_found_by_index,
);

/// The outcomes CSV of `task` as `cookie`'s user downloads it: `school_id → (outcome,
/// person_id)`, the unknown ids under an empty school id.
async fn outcomes(bulk: &Bulk, task: &Value, cookie: &str) -> BTreeMap<String, Vec<String>> {
    let href = task["links"]["outcomes"].as_str().unwrap();
    let (response, text) = send(&bulk.app, get(href, Some(cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("school_id,name,outcome,meaning,person_id")
    );
    let mut found = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 5, "{line}");
        let entry: &mut Vec<String> = found.entry(cells[0].to_owned()).or_default();
        entry.push(cells[2].to_owned());
        if cells[0].is_empty() {
            entry.push(cells[4].to_owned());
        }
    }
    found
}

/// The ids of the tasks `GET /api/1/tasks?person=<school_id>` lists for `cookie`'s user,
/// oldest first.
async fn touching(bulk: &Bulk, school_id: &str, cookie: &str) -> Vec<String> {
    let path = format!("/api/1/tasks?person={school_id}");
    let (response, text) = send(&bulk.app, get(&path, Some(cookie))).await;
    assert_status(&response, &text, StatusCode::OK);
    let page: Value = serde_json::from_str(&text).unwrap();
    let mut ids: Vec<String> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap().to_owned())
        .collect();
    ids.reverse();
    ids
}

fn outcome(value: &str) -> Vec<String> {
    vec![value.to_owned()]
}

async fn every_person_targeted_has_an_outcome_found_by_person(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    let olive = add_user(&db, "olive", Role::Staff).await;
    let colleague = add_user(&db, "colleague", Role::Staff).await;
    add_user(&db, "ada", Role::Admin).await;
    let mine = insert_people(&db.conn, "mine", 3, Some(olive.id)).await;
    let theirs = insert_people(&db.conn, "theirs", 1, Some(colleague.id)).await;
    let no_address = Statement::from_sql_and_values(
        db.conn.get_database_backend(),
        "UPDATE person SET email = NULL WHERE id = $1",
        [mine[2].into()],
    );
    db.conn.execute_raw(no_address).await.unwrap();
    let nobody = Uuid::now_v7();
    let cookie = sign_in_as(&bulk.app, "olive").await;
    let run = async |path: &str, body: Value| {
        let reference = bulk.submit(path, body, &cookie).await;
        let task = bulk.finished(&reference, &cookie).await;
        assert_eq!(task["workflow_status"], "COMPLETED", "{task}");
        task
    };

    let status = "/api/1/caseload/program-status-changes";
    let first = run(
        status,
        json!({"ids": ids_json(&mine[..1]), "to_status": "INACTIVE", "reason": "moved"}),
    )
    .await;
    let targets = [mine[0], mine[1], theirs[0], nobody];
    let second = run(
        status,
        json!({"ids": ids_json(&targets), "to_status": "INACTIVE", "reason": "moved"}),
    )
    .await;
    assert_eq!(
        outcomes(&bulk, &second, &cookie).await,
        BTreeMap::from([
            ("mine-0".into(), outcome("unchanged")),
            ("mine-1".into(), outcome("changed")),
            ("theirs-0".into(), outcome("out_of_scope")),
            (String::new(), vec!["unknown".into(), nobody.to_string()]),
        ])
    );
    // A saved query's people have their outcomes too.
    let watch = run(
        "/api/1/caseload/watches",
        json!({"query": {"contains": "mine"}}),
    )
    .await;
    let watched = outcomes(&bulk, &watch, &cookie).await;
    assert_eq!(watched.len(), 3, "{watched:?}");
    assert!(watched.values().all(|found| found == &outcome("changed")));
    let email = run(
        "/api/1/caseload/emails",
        json!({"ids": ids_json(&[mine[0], mine[2]]), "subject": "Hello", "body": "Hi."}),
    )
    .await;
    assert_eq!(
        outcomes(&bulk, &email, &cookie).await,
        BTreeMap::from([
            ("mine-0".into(), outcome("changed")),
            ("mine-2".into(), outcome("no_email_address")),
        ])
    );

    // Which tasks touched a person, whatever became of them there.
    let id = |task: &Value| task["id"].as_str().unwrap().to_owned();
    assert_eq!(
        touching(&bulk, "mine-0", &cookie).await,
        [id(&first), id(&second), id(&watch), id(&email)]
    );
    assert_eq!(touching(&bulk, "theirs-0", &cookie).await, [id(&second)]);
    let colleague_cookie = sign_in_as(&bulk.app, "colleague").await;
    assert!(
        touching(&bulk, "theirs-0", &colleague_cookie)
            .await
            .is_empty(),
        "staff find only their own tasks"
    );
    let ada = sign_in_as(&bulk.app, "ada").await;
    assert_eq!(
        touching(&bulk, "mine-2", &ada).await,
        [id(&watch), id(&email)]
    );
    let (response, text) = send(
        &bulk.app,
        get("/api/1/tasks?person=nobody-here", Some(&ada)),
    )
    .await;
    assert_status(&response, &text, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(text.contains("\"person\""), "{text}");

    // Outcomes are the task's: another member of staff cannot even confirm it exists.
    let href = second["links"]["outcomes"].as_str().unwrap();
    let (response, text) = send(&bulk.app, get(href, Some(&colleague_cookie))).await;
    assert_status(&response, &text, StatusCode::NOT_FOUND);

    // Once the queue prunes its tasks, their outcomes go too.
    let after_all = bulk.store.clock().now() + chrono::Duration::days(1);
    bulk.store.task_prune(after_all, 1_000).await.unwrap();
    let forgotten = caseload::outcomes::forget_pruned(&bulk.store)
        .await
        .unwrap();
    // The status changes' changed people are read from their history, not recorded twice.
    assert_eq!(forgotten, 3 + 3 + 2);
    assert_eq!(db.scalar("SELECT COUNT(*) FROM task_outcome").await, 0);
    bulk.stop().await;
}

/// Each table the `person` filter looks in (the recorded outcomes and every change history,
/// ADR 0084) is read through an index by person: scanned, a million alerts raised would cost
/// every search by person a read of them all. PostgreSQL is told to scan only where it must.
async fn the_tasks_touching_a_person_are_found_by_index(db: TestDatabase) {
    let backend = db.conn.get_database_backend();
    let listed = caseload::outcomes::tasks_touching(Uuid::now_v7());
    assert!(listed.tables.len() > 1, "{listed:?}");
    let txn = db.conn.begin().await.unwrap();
    let (explain, mark, scan) = match backend {
        sea_orm::DbBackend::Postgres => {
            txn.execute_unprepared("SET LOCAL enable_seqscan = off")
                .await
                .unwrap();
            ("EXPLAIN", "$1", "Seq Scan")
        }
        _ => ("EXPLAIN QUERY PLAN", "?", "SCAN "),
    };
    for table in &listed.tables {
        let sql = format!(
            "{explain} SELECT {} FROM {table} WHERE {} = {mark}",
            listed.task_column, listed.key_column
        );
        let statement = Statement::from_sql_and_values(backend, sql, [listed.key.into()]);
        let plan: Vec<String> = txn
            .query_all_raw(statement)
            .await
            .unwrap()
            .iter()
            .map(|row| row.try_get_by_index::<String>(row_detail(backend)).unwrap())
            .collect();
        assert!(
            !plan.iter().any(|step| step.contains(scan)),
            "{table} is scanned:\n{}",
            plan.join("\n")
        );
    }
}

/// The column of an `EXPLAIN` row that says what the step does.
fn row_detail(backend: sea_orm::DbBackend) -> usize {
    match backend {
        // id, parent, notused, detail
        sea_orm::DbBackend::Sqlite => 3,
        _ => 0,
    }
}
