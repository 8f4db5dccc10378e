//! `bulkq user ...`: staff accounts from a shell, with the same rules as the Users page
//! (the last enabled admin stays; disabling or resetting ends the user's sessions).

use app::api::session_store::DatabaseSessionStore;
use caseload::users::accounts::{self, Account};
use caseload::users::{NewStaffUser, Role, create_user};
use sea_orm::{DatabaseConnection, TransactionTrait};

use crate::config::{CreateUserArgs, UserCommand};
use crate::database_target::DatabaseTarget;

/// Runs one `user` subcommand and prints its outcome.
pub async fn run(database: &DatabaseTarget, command: UserCommand) -> anyhow::Result<()> {
    let db = database
        .open(queue::database::DEFAULT_MAX_CONNECTIONS)
        .await?;
    match command {
        UserCommand::List => {
            println!("{}", account_table(&accounts::list_accounts(&db).await?));
        }
        UserCommand::Create(args) => create(&db, args).await?,
        UserCommand::Disable(args) => {
            let txn = db.begin().await?;
            let account = accounts::set_disabled(&txn, &args.username, true).await?;
            let ended = DatabaseSessionStore::delete_sessions_of(&txn, account.id).await?;
            txn.commit().await?;
            println!("Disabled {:?}; ended {ended} sessions.", account.username);
        }
        UserCommand::Enable(args) => {
            let account = accounts::set_disabled(&db, &args.username, false).await?;
            println!("Enabled {:?}.", account.username);
        }
        UserCommand::SetRole(args) => {
            let role: Role = args.role.parse()?;
            let txn = db.begin().await?;
            let account = accounts::set_role(&txn, &args.username, role).await?;
            txn.commit().await?;
            println!("{:?} is now {}.", account.username, role.as_str());
        }
        UserCommand::ResetPassword(args) => {
            let txn = db.begin().await?;
            let (account, password) = accounts::reset_password(&txn, &args.username).await?;
            DatabaseSessionStore::delete_sessions_of(&txn, account.id).await?;
            txn.commit().await?;
            println!(
                "One-time password of {:?} (to change at the next sign-in): {password}",
                account.username
            );
        }
        UserCommand::SetEmail(args) => {
            let account = accounts::set_email(&db, &args.username, args.email.as_deref()).await?;
            match account.email {
                Some(email) => println!("{:?} is told things at {email}.", account.username),
                None => println!("{:?} has no email address on file.", account.username),
            }
        }
    }
    Ok(())
}

/// `user create`: with the given password, or a one-time one to change at first sign-in.
async fn create(db: &DatabaseConnection, args: CreateUserArgs) -> anyhow::Result<()> {
    let role: Role = args.role.parse()?;
    let display_name = args.display_name.unwrap_or_default();
    match args.password {
        Some(password) => {
            let user = create_user(
                db,
                NewStaffUser {
                    username: args.username,
                    display_name,
                    role,
                    password,
                },
            )
            .await?;
            println!("Created {} user {:?}.", role.as_str(), user.username);
        }
        None => {
            let txn = db.begin().await?;
            let (account, password) =
                accounts::create_account(&txn, &args.username, &display_name, role).await?;
            txn.commit().await?;
            println!("Created {} user {:?}.", role.as_str(), account.username);
            println!("One-time password (to change at the first sign-in): {password}");
        }
    }
    Ok(())
}

/// The accounts as an aligned table.
fn account_table(accounts: &[Account]) -> String {
    let width = accounts
        .iter()
        .map(|account| account.username.chars().count())
        .max()
        .unwrap_or(0)
        .max("USERNAME".len());
    let mut lines = vec![format!(
        "{:<width$}  ROLE   STATE     NAME (EMAIL)",
        "USERNAME"
    )];
    for account in accounts {
        let state = match (account.disabled_at, account.must_change_password) {
            (Some(_), _) => "disabled",
            (None, true) => "reset",
            (None, false) => "active",
        };
        let email = account
            .email
            .as_deref()
            .map(|email| format!(" ({email})"))
            .unwrap_or_default();
        lines.push(format!(
            "{:<width$}  {:<5}  {state:<8}  {}{email}",
            account.username,
            account.role.as_str(),
            account.display_name
        ));
    }
    lines.join("\n")
}
