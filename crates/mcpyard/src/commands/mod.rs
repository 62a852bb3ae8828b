//! One module per subcommand; this one dispatches and holds what they
//! share (loading the configuration, setting up logs).

mod audit;
mod call;
mod check;
mod elicit;
mod install_client;
mod list;
mod login;
mod reload;
mod serve;
mod shutdown;
mod stdio;
mod target;

use std::path::Path;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::config::{self, Settings};
use crate::logging;

/// Log filter of the client commands: quiet unless something is wrong, so
/// their output stays readable.
const CLIENT_LOG_LEVEL: &str = "warn";

pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cli_level = cli.log_level.as_deref();
    let log_format = cli.log_format;
    match cli.command {
        Command::Serve(args) => {
            let (settings, traces) =
                load_for_server(args.config.as_deref(), cli_level, log_format)?;
            let reload = reload::Reload::new(args.config.clone(), &settings);
            let served = serve::run(settings, args.listen, args.api_key, reload).await;
            traces.shutdown().await;
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stdio(args) => {
            let (settings, traces) =
                load_for_server(args.config.as_deref(), cli_level, log_format)?;
            let reload = reload::Reload::new(args.config.clone(), &settings);
            let served = stdio::run(settings, reload).await;
            traces.shutdown().await;
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            let config = args.config.as_deref();
            if args.connect {
                Ok(check::run_connected(config).await)
            } else {
                Ok(check::run(config))
            }
        }
        Command::List(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            list::run(args).await
        }
        Command::Call(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            call::run(args).await
        }
        Command::Login(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            login::run(args).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions(args) => {
            completions(args.shell);
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            audit::run(args)
        }
        Command::InstallClient(args) => {
            logging::init(cli_level, log_format, CLIENT_LOG_LEVEL, None)?;
            install_client::run(args)
        }
    }
}

/// Loads the configuration (or the embedded default), sets up logging at
/// its level (and the export of traces it asks for) and logs its warnings.
fn load_for_server(
    path: Option<&Path>,
    cli_level: Option<&str>,
    log_format: logging::LogFormat,
) -> anyhow::Result<(Settings, logging::Traces)> {
    let settings = config::load_or_default(path)?;
    let traces = logging::init(
        cli_level,
        log_format,
        &settings.log_level,
        Some(&settings.telemetry),
    )?;
    for w in &settings.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(
        config = %settings.source,
        servers = settings.gateway.upstreams().count(),
        "configuration loaded"
    );
    Ok((settings, traces))
}

/// Writes the completion script of `shell` on stdout.
fn completions(shell: clap_complete::Shell) {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "mcpyard", &mut std::io::stdout());
}
