//! The `bulkq` binary: parses the command line, sets up logging and runs a subcommand.

use std::io::IsTerminal;

use clap::Parser;
use server::config::ImportCommand;
use server::config::{Cli, Command, LogFormat};
use server::{backup, commands, config_file, import_command, user_commands};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args =
        config_file::with_config_file(std::env::args_os().collect(), |var| std::env::var_os(var))?;
    let cli = Cli::parse_from(args);
    let filter = EnvFilter::try_new(&cli.global.log_level)?;
    match cli.global.log_format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stdout().is_terminal())
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init(),
    }
    let database = cli.global.database();
    match cli
        .command
        .unwrap_or_else(|| Command::Serve(Default::default()))
    {
        Command::Serve(options) => {
            commands::serve(&database, *options, cli.global.log_format).await
        }
        Command::Migrate => commands::migrate(&database).await,
        Command::Seed(args) => commands::seed(&database, args).await,
        Command::User(command) => user_commands::run(&database, command).await,
        Command::Import(ImportCommand::People(args)) => {
            import_command::import_people(&database, args).await
        }
        Command::Backup(args) => backup::backup(&database.url, args).await,
    }
}
