//! The audit trail as admins use it: acts on tasks, periodic jobs, pauses, accounts and
//! tokens, from the dashboard, the JSON API and the shell, each recorded once with who,
//! what, which targets, when and from where; the Audit page's filters and pages, its CSV,
//! staff kept out, and entries forgotten past their retention.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use caseload::store::entity::audit_event;
use caseload::testing::insert_people;
use caseload::users::Role;
use chrono::Utc;
use migration::Migrator;
use queue::testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use server::config::{UserCommand, UsernameArg};
use server::database_target::DatabaseTarget;

use crate::bulk_actions::{Bulk, ids_json};
use crate::helpers::*;

queue::backend_tests!(Migrator =>
    every_admin_act_is_recorded_once_with_who_and_where,
    the_trail_filters_pages_downloads_and_forgets,
);

/// `request` as if it came from `address` (the TCP peer the server sees).
fn from(mut request: Request<Body>, address: &str) -> Request<Body> {
    let peer: SocketAddr = format!("{address}:40000").parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    request
}

/// The Audit page's server call with `query` (the page's URL fields) as `cookie`.
async fn audit_page(bulk: &Bulk, query: Value, cookie: &str) -> (StatusCode, Value) {
    let body = json!({ "query": query }).to_string();
    let (response, text) = send(&bulk.app, post_json("/api/audit_page", &body, Some(cookie))).await;
    (response.status(), serde_json::from_str(&text).unwrap())
}

/// The acts of a page's entries, newest first.
fn acts(page: &Value) -> Vec<&str> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["act"].as_str().unwrap())
        .collect()
}

async fn every_admin_act_is_recorded_once_with_who_and_where(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let people = insert_people(&db.conn, "audited", 2, None).await;
    let sam = sign_in(&bulk.app).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    let ok = |response: &axum::http::Response<()>, text: &str| {
        assert!(
            response.status().is_success(),
            "{} {text}",
            response.status()
        );
    };

    // Accounts, from the Users page's calls, from a known address.
    for (path, form) in [
        (
            "/api/users/create",
            "username=kim&display_name=Kim&role=staff",
        ),
        ("/api/users/role", "username=kim&role=admin"),
        ("/api/users/disable", "username=kim&disabled=true"),
        ("/api/users/reset_password", "username=kim"),
    ] {
        let request = from(post_form(path, form, Some(&ada)), "192.0.2.10");
        let (response, text) = send(&bulk.app, request).await;
        ok(&response, &text);
    }
    // A refused change records nothing: the last admin cannot lose the role.
    let request = post_form("/api/users/role", "username=ada&role=staff", Some(&ada));
    let (response, _) = send(&bulk.app, request).await;
    assert!(response.status().is_client_error());

    // A token made and revoked by its user.
    let (response, text) = send(
        &bulk.app,
        post_form(
            "/api/account/tokens/create",
            "name=nightly&can_act=false&expires_in_days=30",
            Some(&sam),
        ),
    )
    .await;
    ok(&response, &text);
    let token: Value = serde_json::from_str(&text).unwrap();
    let token_id = token["token"]["id"].as_str().unwrap().to_owned();
    let form = format!("id={token_id}");
    let (response, text) = send(
        &bulk.app,
        post_form("/api/account/tokens/revoke", &form, Some(&sam)),
    )
    .await;
    ok(&response, &text);

    // A waiting task steered by its owner through the JSON API, then cancelled by an admin.
    let tomorrow = Utc::now() + chrono::Duration::days(1);
    let body = json!({"ids": ids_json(&people), "run_at": tomorrow.to_rfc3339()});
    let waiting = bulk.submit("/api/1/caseload/watches", body, &sam).await;
    let task_id = waiting["id"].as_str().unwrap().to_owned();
    let path = format!("/api/1/tasks/{task_id}/schedule");
    let request = from(
        post_json(&path, r#"{"priority": 5}"#, Some(&sam)),
        "198.51.100.7",
    );
    let (response, text) = send(&bulk.app, request).await;
    ok(&response, &text);
    let act = json!({"act": "cancel", "selection": {"ids": [task_id]}}).to_string();
    let (response, text) = send(&bulk.app, post_json("/api/1/tasks/act", &act, Some(&ada))).await;
    ok(&response, &text);
    // Cancelling it again changes nothing, and records nothing.
    let (response, text) = send(&bulk.app, post_json("/api/1/tasks/act", &act, Some(&ada))).await;
    ok(&response, &text);

    // Pauses: an action and a periodic job (once the node has listed its jobs); pausing
    // what is paused records nothing more.
    for _ in 0..2 {
        let request = post_form(
            "/api/set_action_paused",
            "action=caseload.export&paused=true",
            Some(&ada),
        );
        let (response, text) = send(&bulk.app, request).await;
        ok(&response, &text);
    }
    let job = caseload::audit::AUDIT_RETENTION_JOB;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !bulk
        .store
        .periodic_list()
        .await
        .unwrap()
        .iter()
        .any(|j| j.name == job)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{job} listed within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let request = post_json(&format!("/api/1/periodic-jobs/{job}/pause"), "", Some(&ada));
    let (response, text) = send(&bulk.app, request).await;
    ok(&response, &text);

    // From a shell.
    let target = DatabaseTarget::at(db.url.as_str());
    let enable = UserCommand::Enable(UsernameArg {
        username: "kim".into(),
    });
    server::user_commands::run(&target, enable).await.unwrap();

    let (status, page) = audit_page(&bulk, json!({}), &ada).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        acts(&page),
        [
            "users.enable",
            "periodic_jobs.pause",
            "actions.pause",
            "tasks.cancel",
            "tasks.reschedule",
            "tokens.revoke",
            "tokens.create",
            "users.reset_password",
            "users.disable",
            "users.set_role",
            "users.create",
        ],
        "{page}"
    );
    let entries = page["entries"].as_array().unwrap();
    let entry = |act: &str| entries.iter().find(|e| e["act"] == act).unwrap();
    let created = entry("users.create");
    assert_eq!(
        (
            &created["actor"],
            &created["targets"],
            &created["detail"],
            &created["client"]
        ),
        (
            &json!("ada"),
            &json!("kim"),
            &json!("role: staff"),
            &json!("192.0.2.10")
        )
    );
    assert_eq!(entry("users.set_role")["detail"], "role: admin");
    let moved = entry("tasks.reschedule");
    assert_eq!(
        (&moved["actor"], &moved["client"]),
        (&json!("sam"), &json!("198.51.100.7"))
    );
    assert_eq!(moved["targets"], task_id.as_str());
    assert!(
        moved["detail"].as_str().unwrap().ends_with("priority 5"),
        "{moved}"
    );
    let cancelled = entry("tasks.cancel");
    assert_eq!(
        (&cancelled["actor"], &cancelled["target_count"]),
        (&json!("ada"), &json!(1))
    );
    let made = entry("tokens.create");
    assert!(
        made["targets"].as_str().unwrap().contains(&token_id),
        "{made}"
    );
    assert_eq!(made["detail"], "read only, expires in 30 days");
    assert_eq!(entry("periodic_jobs.pause")["targets"], job);
    let shell = entry("users.enable");
    assert_eq!(shell["client"], "command line");
    assert!(
        shell["actor"].as_str().unwrap().ends_with("(shell)"),
        "{shell}"
    );

    // Staff see none of it.
    let (status, _) = audit_page(&bulk, json!({}), &sam).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (response, _) = send(&bulk.app, get("/admin/audit.csv", Some(&sam))).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    bulk.stop().await;
}

async fn the_trail_filters_pages_downloads_and_forgets(db: TestDatabase) {
    let bulk = Bulk::start(&db).await;
    add_user(&db, "ada", Role::Admin).await;
    let ada = sign_in_as(&bulk.app, "ada").await;
    let sam = sign_in(&bulk.app).await;
    for name in ["lee", "max"] {
        let form = format!("username={name}&display_name=&role=staff");
        let (response, text) =
            send(&bulk.app, post_form("/api/users/create", &form, Some(&ada))).await;
        assert!(
            response.status().is_success(),
            "{} {text}",
            response.status()
        );
    }
    let (response, text) = send(
        &bulk.app,
        post_form(
            "/api/account/tokens/create",
            "name=%3Dsum(A1)&can_act=true&expires_in_days=0",
            Some(&sam),
        ),
    )
    .await;
    assert!(response.status().is_success(), "{text}");

    // Filters: who, area, target text (case aside), days; every bad one named.
    let (_, by_sam) = audit_page(&bulk, json!({"who": "sam"}), &ada).await;
    assert_eq!(acts(&by_sam), ["tokens.create"]);
    let (_, users) = audit_page(&bulk, json!({"area": "users"}), &ada).await;
    assert_eq!(acts(&users), ["users.create", "users.create"]);
    let (_, lee) = audit_page(&bulk, json!({"target": "LEE"}), &ada).await;
    assert_eq!(lee["entries"][0]["targets"], "lee");
    assert_eq!(acts(&lee).len(), 1);
    let (_, wildcard) = audit_page(&bulk, json!({"target": "%"}), &ada).await;
    assert_eq!(
        acts(&wildcard).len(),
        0,
        "a % matches only itself: {wildcard}"
    );
    let today = Utc::now().date_naive();
    let (_, today_only) = audit_page(
        &bulk,
        json!({"from": today.to_string(), "to": today.to_string()}),
        &ada,
    )
    .await;
    assert_eq!(acts(&today_only).len(), 3);
    let (_, yesterday) = audit_page(
        &bulk,
        json!({"to": today.pred_opt().unwrap().to_string()}),
        &ada,
    )
    .await;
    assert_eq!(acts(&yesterday).len(), 0);
    let bad = json!({"who": "a\u{0}b", "area": "everything", "from": "monday", "before": "x", "limit": "0"});
    let (status, error) = audit_page(&bulk, bad, &ada).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    for field in ["who", "area", "from", "before", "limit"] {
        assert!(
            error["Invalid"]["fields"][field].is_string(),
            "{field}: {error}"
        );
    }

    // Pages follow one another without gaps or repeats.
    let (_, first) = audit_page(&bulk, json!({"limit": "2"}), &ada).await;
    let next = first["next"].as_str().unwrap().to_owned();
    let (_, second) = audit_page(&bulk, json!({"limit": "2", "before": next}), &ada).await;
    assert_eq!(acts(&first), ["tokens.create", "users.create"]);
    assert_eq!(acts(&second), ["users.create"]);
    assert!(second["next"].is_null());

    // The CSV holds what the filters match, every page of it, formulas defused.
    let (response, csv) = send(
        &bulk.app,
        get("/admin/audit.csv?area=tokens&limit=1", Some(&ada)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK, "{csv}");
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "at,actor,act,targets,target_count,detail,client");
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].contains(",sam,tokens.create,'=sum(A1) ("), "{csv}");
    let (response, csv) = send(&bulk.app, get("/admin/audit.csv", Some(&ada))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(csv.lines().count(), 4, "{csv}");
    let (response, _) = send(&bulk.app, get("/admin/audit.csv?from=never", Some(&ada))).await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // Past the retention, entries are forgotten; younger ones stay.
    let two_days_ago = Utc::now() - chrono::Duration::days(2);
    audit_event::Entity::update_many()
        .col_expr(audit_event::Column::At, Expr::value(two_days_ago))
        .filter(audit_event::Column::Act.eq("tokens.create"))
        .exec(&db.conn)
        .await
        .unwrap();
    let forgotten = caseload::audit::forget_older_than(&bulk.store, Duration::from_secs(24 * 3600))
        .await
        .unwrap();
    assert_eq!(forgotten, 1);
    let (_, left) = audit_page(&bulk, json!({}), &ada).await;
    assert_eq!(acts(&left), ["users.create", "users.create"]);
    bulk.stop().await;
}
