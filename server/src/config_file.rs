//! `--config FILE` (`BULKQ_CONFIG`): every flag may come from a TOML file, the one a
//! service manager's unit points at. A flag on the command line wins, then its environment
//! variable, then the file, then the default.
//!
//! The file's keys are the flags' long names, of `bulkq` itself and of `serve` alike, since
//! a file configures a node: `listen = "0.0.0.0:8080"`, `workers = 8`,
//! `secure-cookies = true`. An unknown key is an error that names it (a typo must not pass
//! for a setting), and so is a value that is not a string, number or boolean.
//!
//! The file is turned into command-line flags placed before the command line's own, and
//! only for flags neither the command line nor the environment sets; clap then parses as
//! usual, so a value from the file is checked exactly as the same flag typed would be.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Arg, ArgAction, CommandFactory};

use crate::config::Cli;

/// The flag naming the file, and its environment variable.
const CONFIG_FLAG: &str = "--config";
const CONFIG_ENV: &str = "BULKQ_CONFIG";
/// The subcommand a file's node settings belong to.
const SERVE: &str = "serve";

/// The command line `args` (the program's name first) with the settings of the config file
/// it or `env` names added; `args` unchanged without one. `env` reads the environment.
pub fn with_config_file(
    args: Vec<OsString>,
    env: impl Fn(&str) -> Option<OsString>,
) -> anyhow::Result<Vec<OsString>> {
    let Some(path) = config_path(&args).or_else(|| env(CONFIG_ENV).map(PathBuf::from)) else {
        return Ok(args);
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the config file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("the config file {}", path.display()))?;
    let cli = Cli::command();
    let serve = cli.find_subcommand(SERVE).context("the serve subcommand")?;
    let (mut global_flags, mut serve_flags) = (Vec::new(), Vec::new());
    for (key, value) in &table {
        let name = key.replace('_', "-");
        let (arg, flags) = match (find_flag(&cli, &name), find_flag(serve, &name)) {
            (Some(arg), _) => (arg, &mut global_flags),
            (None, Some(arg)) => (arg, &mut serve_flags),
            (None, None) => bail!("{}: unknown setting {key:?}", path.display()),
        };
        let set_elsewhere = given(&args, &name)
            || arg
                .get_env()
                .and_then(OsStr::to_str)
                .is_some_and(|var| env(var).is_some());
        if name == "config" || set_elsewhere {
            continue;
        }
        flags.extend(as_flags(&name, arg, value).with_context(|| path.display().to_string())?);
    }
    Ok(placed(&cli, args, global_flags, serve_flags))
}

/// The file `--config FILE` or `--config=FILE` names on the command line.
fn config_path(args: &[OsString]) -> Option<PathBuf> {
    let mut args = args.iter().skip(1);
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy();
        if arg == CONFIG_FLAG {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(path));
        }
    }
    None
}

fn find_flag<'a>(command: &'a clap::Command, name: &str) -> Option<&'a Arg> {
    command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(name))
}

/// Whether the command line sets the flag `--name`.
fn given(args: &[OsString], name: &str) -> bool {
    let flag = format!("--{name}");
    args.iter().any(|arg| {
        let arg = arg.to_string_lossy();
        arg == flag || arg.starts_with(&format!("{flag}="))
    })
}

/// The flag `--name` as the file sets it: a switch when true, nothing when false.
fn as_flags(name: &str, arg: &Arg, value: &toml::Value) -> anyhow::Result<Vec<OsString>> {
    let switch = matches!(arg.get_action(), ArgAction::SetTrue);
    let text = match value {
        toml::Value::Boolean(on) if switch => {
            return Ok(match on {
                true => vec![format!("--{name}").into()],
                false => vec![],
            });
        }
        toml::Value::String(text) => text.clone(),
        toml::Value::Integer(number) => number.to_string(),
        toml::Value::Float(number) => number.to_string(),
        toml::Value::Boolean(on) => on.to_string(),
        _ => bail!("{name}: a string, a number or true/false"),
    };
    if switch {
        bail!("{name}: true or false");
    }
    Ok(vec![format!("--{name}={text}").into()])
}

/// `args` with the file's global flags right after the program's name and its node flags
/// right after `serve`, before the command line's own. Without a subcommand the command is
/// `serve`, named so the node flags have a place.
fn placed(
    cli: &clap::Command,
    args: Vec<OsString>,
    global: Vec<OsString>,
    serve: Vec<OsString>,
) -> Vec<OsString> {
    let mut args = args.into_iter();
    let mut placed: Vec<OsString> = args.next().into_iter().chain(global).collect();
    let rest: Vec<OsString> = args.collect();
    match subcommand_at(cli, &rest) {
        Some(at) if rest[at] == SERVE => {
            placed.extend(rest[..=at].iter().cloned());
            placed.extend(serve);
            placed.extend(rest[at + 1..].iter().cloned());
        }
        Some(_) => placed.extend(rest),
        None => {
            placed.extend(rest);
            if !serve.is_empty() {
                placed.push(SERVE.into());
                placed.extend(serve);
            }
        }
    }
    placed
}

/// Where the subcommand's name is in the arguments after the program's: the first that is
/// neither a flag nor a global flag's value.
fn subcommand_at(cli: &clap::Command, args: &[OsString]) -> Option<usize> {
    let mut at = 0;
    while at < args.len() {
        let arg = args[at].to_string_lossy();
        match arg.strip_prefix("--") {
            Some(flag) if !flag.contains('=') => {
                let takes_value = find_flag(cli, flag)
                    .is_some_and(|arg| matches!(arg.get_action(), ArgAction::Set));
                at += if takes_value { 2 } else { 1 };
            }
            Some(_) => at += 1,
            None if arg.starts_with('-') => at += 1,
            None => return Some(at),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use clap::Parser;

    use super::*;
    use crate::config::Command;

    /// Parses `line` with the config file `toml` and the environment `env`; the serve options.
    fn parse(line: &[&str], toml: &str, env: &[(&str, &str)]) -> anyhow::Result<Cli> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), toml).unwrap();
        let env: HashMap<String, OsString> = env
            .iter()
            .map(|(key, value)| (key.to_string(), value.into()))
            .chain([(CONFIG_ENV.to_owned(), file.path().into())])
            .collect();
        let args = std::iter::once("bulkq")
            .chain(line.iter().copied())
            .map(OsString::from);
        let args = with_config_file(args.collect(), |var| env.get(var).cloned())?;
        // clap reads the real environment, which sets none of these flags.
        Ok(Cli::try_parse_from(args)?)
    }

    fn serve(cli: Cli) -> crate::config::ServeOptions {
        match cli.command {
            Some(Command::Serve(options)) => *options,
            other => panic!("not serve: {other:?}"),
        }
    }

    const FILE: &str = r#"
        listen = "0.0.0.0:8080"
        workers = 4
        secure-cookies = true
        shutdown_grace = "45s"
        log-level = "debug"
    "#;

    #[test]
    fn the_file_sets_what_the_command_line_and_environment_leave() {
        let cli = parse(&["serve"], FILE, &[]).unwrap();
        assert_eq!(cli.global.log_level, "debug");
        let options = serve(cli);
        assert_eq!(options.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(options.workers, 4);
        assert!(options.secure_cookies);
        assert_eq!(options.shutdown_grace, Duration::from_secs(45));
        assert_eq!(options.max_connections, 768, "the default");
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file() {
        let options = serve(parse(&["serve", "--workers", "9"], FILE, &[]).unwrap());
        assert_eq!(options.workers, 9, "the command line wins");
        // The environment's value is clap's to read; here it only hides the file's.
        let cli = parse(&["serve"], FILE, &[("BULKQ_WORKERS", "7")]).unwrap();
        assert_eq!(
            serve(cli).workers,
            16,
            "the file steps aside for the environment"
        );
    }

    #[test]
    fn without_a_subcommand_the_file_configures_serve() {
        let options = serve(parse(&["--log-format", "json"], FILE, &[]).unwrap());
        assert_eq!(options.workers, 4);
    }

    #[test]
    fn other_subcommands_take_only_the_global_settings() {
        let cli = parse(&["migrate"], FILE, &[]).unwrap();
        assert!(matches!(cli.command, Some(Command::Migrate)));
        assert_eq!(cli.global.log_level, "debug");
    }

    #[test]
    fn the_shipped_example_is_a_valid_config_file() {
        let example = include_str!("../../deploy/bulkq.toml");
        let options = serve(parse(&[], example, &[]).unwrap());
        assert_eq!(options.system_id, "bulkq-1");
        assert!(options.secure_cookies && options.trust_forwarded_for);
    }

    #[test]
    fn typos_and_bad_values_are_refused_by_name() {
        let error = parse(&["serve"], "wokers = 4", &[]).unwrap_err();
        assert!(
            error.to_string().contains("unknown setting \"wokers\""),
            "{error:#}"
        );
        let error = parse(&["serve"], "workers = \"many\"", &[]).unwrap_err();
        assert!(format!("{error:#}").contains("workers"), "{error:#}");
        let error = parse(&["serve"], "secure-cookies = \"yes\"", &[]).unwrap_err();
        assert!(format!("{error:#}").contains("true or false"), "{error:#}");
        let error = parse(&["serve"], "listen = [1]", &[]).unwrap_err();
        assert!(
            format!("{error:#}").contains("a string, a number"),
            "{error:#}"
        );
    }
}
