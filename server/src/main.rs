//! The `bulkq` binary: parses the command line, sets up logging and runs a subcommand.

use clap::Parser;
use server::commands;
use server::config::{Cli, Command};
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
        Command::CreateUser(args) => commands::create_user_command(&database_url, args).await,
    }
}
