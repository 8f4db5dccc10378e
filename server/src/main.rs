//! The `bulkq` binary: parses the command line, sets up logging and runs a subcommand.

use clap::Parser;
use server::config::ImportCommand;
use server::config::{Cli, Command};
use server::{commands, import_command, user_commands};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&cli.global.log_level)?)
        .init();
    let database_url = cli.global.database_url;
    match cli
        .command
        .unwrap_or_else(|| Command::Serve(Default::default()))
    {
        Command::Serve(options) => commands::serve(&database_url, *options).await,
        Command::Migrate => commands::migrate(&database_url).await,
        Command::Seed(args) => commands::seed(&database_url, args).await,
        Command::User(command) => user_commands::run(&database_url, command).await,
        Command::Import(ImportCommand::People(args)) => {
            import_command::import_people(&database_url, args).await
        }
    }
}
