//! Shared set-up for the caseload tests: users and people.

use caseload::access::Actor;
use caseload::testing::insert_people;
use caseload::users::{NewStaffUser, Role, create_user};
use queue::testing::TestDatabase;
use uuid::Uuid;

/// Creates a staff user or admin and returns them as an actor.
pub async fn actor(db: &TestDatabase, username: &str, role: Role) -> Actor {
    let user = create_user(
        &db.conn,
        NewStaffUser {
            username: username.into(),
            display_name: username.into(),
            role,
            password: "a-test-password-1".into(),
        },
    )
    .await
    .unwrap();
    Actor { id: user.id, role }
}

/// Inserts `count` people (see [`insert_people`]).
pub async fn people(db: &TestDatabase, tag: &str, count: usize, coach: Option<Uuid>) -> Vec<Uuid> {
    insert_people(&db.conn, tag, count, coach).await
}
