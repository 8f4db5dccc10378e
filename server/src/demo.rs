//! The demo set-up `make run` asks for: two users to sign in with and a caseload to act on.

use caseload::seed::{SeedOptions, people_count, seed_people};
use caseload::users::{NewStaffUser, Role, count_users, create_user, generate_password};
use sea_orm::DatabaseConnection;

/// The demo data's random seed, so every fresh demo looks the same.
const DEMO_SEED: u64 = 2026;

/// On a database without users, creates a staff and an admin user and prints their
/// passwords (the only time they are shown); on one without people, seeds `people` of them,
/// coached by the demo staff user.
pub async fn ensure_demo_data(db: &DatabaseConnection, people: u64) -> anyhow::Result<()> {
    if count_users(db).await? == 0 {
        let mut lines = Vec::new();
        for (username, display_name, role) in [
            ("staff", "Sam Staff", Role::Staff),
            ("admin", "Alex Admin", Role::Admin),
        ] {
            let password = generate_password();
            create_user(
                db,
                NewStaffUser {
                    username: username.into(),
                    display_name: display_name.into(),
                    role,
                    password: password.clone(),
                },
            )
            .await?;
            lines.push(format!(
                "  {:<6} {username:<6} password: {password}",
                role.as_str()
            ));
        }
        println!("Demo users created (the passwords are shown only this once):");
        for line in lines {
            println!("{line}");
        }
    }
    let existing = people_count(db).await?;
    if existing == 0 && people > 0 {
        let coaches = caseload::users::ids_with_role(db, Role::Staff).await?;
        let started = std::time::Instant::now();
        let added = seed_people(
            db,
            &SeedOptions {
                people,
                seed: DEMO_SEED,
                coaches,
            },
        )
        .await?;
        println!(
            "Demo caseload: {added} people created in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
