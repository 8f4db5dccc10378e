//! `bulkq user ...`: staff accounts from a shell, with the same rules as the Users page
//! (the last enabled admin stays; disabling or resetting ends the user's sessions).

use app::api::session_store::DatabaseSessionStore;
use bulkq_types::audit::AuditAct;
use caseload::audit::{Actor, record};
use caseload::users::accounts::{self, Account};
use caseload::users::{NewStaffUser, Role, create_user};

use crate::config::{CreateUserArgs, UserCommand};
use crate::database_target::DatabaseTarget;

/// Runs one `user` subcommand and prints its outcome.
pub async fn run(database: &DatabaseTarget, command: UserCommand) -> anyhow::Result<()> {
    let db = database
        .open(queue::database::DEFAULT_MAX_CONNECTIONS)
        .await?;
    // Writes begin as the server's do (`BEGIN IMMEDIATE` on SQLite), so a running server's
    // writes are waited for rather than failing the command.
    let store = queue::Store::new(db.clone());
    let by = Actor::command_line();
    match command {
        UserCommand::List => {
            println!("{}", account_table(&accounts::list_accounts(&db).await?));
        }
        UserCommand::Create(args) => create(&store, &by, args).await?,
        UserCommand::Disable(args) => {
            let txn = store.begin_write().await?;
            let account = accounts::set_disabled(&*txn, &by, &args.username, true).await?;
            let ended = DatabaseSessionStore::delete_sessions_of(&*txn, account.id).await?;
            txn.commit().await?;
            println!("Disabled {:?}; ended {ended} sessions.", account.username);
        }
        UserCommand::Enable(args) => {
            let txn = store.begin_write().await?;
            let account = accounts::set_disabled(&*txn, &by, &args.username, false).await?;
            txn.commit().await?;
            println!("Enabled {:?}.", account.username);
        }
        UserCommand::SetRole(args) => {
            let role: Role = args.role.parse()?;
            let txn = store.begin_write().await?;
            let account = accounts::set_role(&*txn, &by, &args.username, role).await?;
            txn.commit().await?;
            println!("{:?} is now {}.", account.username, role.as_str());
        }
        UserCommand::ResetPassword(args) => {
            let txn = store.begin_write().await?;
            let (account, password) = accounts::reset_password(&*txn, &by, &args.username).await?;
            DatabaseSessionStore::delete_sessions_of(&*txn, account.id).await?;
            txn.commit().await?;
            println!(
                "One-time password of {:?} (to change at the next sign-in): {password}",
                account.username
            );
        }
        UserCommand::SetEmail(args) => {
            let txn = store.begin_write().await?;
            let account =
                accounts::set_email(&*txn, &by, &args.username, args.email.as_deref()).await?;
            txn.commit().await?;
            match account.email {
                Some(email) => println!("{:?} is told things at {email}.", account.username),
                None => println!("{:?} has no email address on file.", account.username),
            }
        }
    }
    Ok(())
}

/// `user create`: with the given password, or a one-time one to change at first sign-in.
async fn create(store: &queue::Store, by: &Actor, args: CreateUserArgs) -> anyhow::Result<()> {
    let role: Role = args.role.parse()?;
    let display_name = args.display_name.unwrap_or_default();
    let txn = store.begin_write().await?;
    let (username, one_time_password) = match args.password {
        Some(password) => {
            let new = NewStaffUser {
                username: args.username,
                display_name,
                role,
                password,
            };
            let username = create_user(&*txn, new).await?.username;
            let detail = format!("role: {}", role.as_str());
            record(&*txn, by, AuditAct::UserCreate, &[&username], detail).await?;
            (username, None)
        }
        None => {
            let (account, password) =
                accounts::create_account(&*txn, by, &args.username, &display_name, role).await?;
            (account.username, Some(password))
        }
    };
    txn.commit().await?;
    println!("Created {} user {username:?}.", role.as_str());
    if let Some(password) = one_time_password {
        println!("One-time password (to change at the first sign-in): {password}");
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
