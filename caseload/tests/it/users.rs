use caseload::CaseloadError;
use caseload::users::{NewStaffUser, Role, authenticate, create_user, find_user};
use migration::Migrator;
use queue::testing::TestDatabase;

queue::backend_tests!(Migrator => sign_in_checks_the_password, usernames_are_unique_and_input_is_checked);

fn new_user(username: &str, password: &str) -> NewStaffUser {
    NewStaffUser {
        username: username.into(),
        display_name: format!("{username} display"),
        role: Role::Admin,
        password: password.into(),
    }
}

async fn sign_in_checks_the_password(db: TestDatabase) {
    let created = create_user(&db.conn, new_user("kim", "correct horse battery"))
        .await
        .unwrap();
    assert_eq!(created.role, Role::Admin);

    let found = authenticate(&db.conn, "kim", "correct horse battery")
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(&created));
    // Surrounding spaces in the username are forgiven; the password must be exact.
    assert!(
        authenticate(&db.conn, " kim ", "correct horse battery")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        authenticate(&db.conn, "kim", "correct horse battery ")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        authenticate(&db.conn, "nobody", "correct horse battery")
            .await
            .unwrap()
            .is_none()
    );

    assert_eq!(
        find_user(&db.conn, created.id).await.unwrap(),
        Some(created)
    );
    // The hash is argon2, never the password.
    let stored = db
        .scalar("SELECT COUNT(*) FROM staff_user WHERE password_hash LIKE '$argon2id$%'")
        .await;
    assert_eq!(stored, 1);
}

async fn usernames_are_unique_and_input_is_checked(db: TestDatabase) {
    create_user(&db.conn, new_user("lee", "long enough to pass"))
        .await
        .unwrap();
    assert!(matches!(
        create_user(&db.conn, new_user("lee", "long enough to pass")).await,
        Err(CaseloadError::UsernameTaken(name)) if name == "lee"
    ));
    assert!(matches!(
        create_user(&db.conn, new_user("short", "1234567")).await,
        Err(CaseloadError::Invalid(_))
    ));
    assert!(matches!(
        create_user(&db.conn, new_user("   ", "long enough to pass")).await,
        Err(CaseloadError::Invalid(_))
    ));
    assert!("superuser".parse::<Role>().is_err());
}
