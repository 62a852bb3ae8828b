//! Logs go to stderr, always: in stdio mode stdout carries the protocol.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. The filter is, by precedence:
/// `--log-level`, then `RUST_LOG`, then `fallback` (the config's
/// `log_level`, or `warn` for the client commands).
pub(crate) fn init(cli_level: Option<&str>, fallback: &str) -> anyhow::Result<()> {
    let filter = match cli_level {
        Some(level) => EnvFilter::try_new(level)
            .map_err(|e| anyhow::anyhow!("--log-level: not a log filter: {e}"))?,
        None => match std::env::var("RUST_LOG") {
            Ok(env) if !env.trim().is_empty() => EnvFilter::try_new(&env)
                .map_err(|e| anyhow::anyhow!("RUST_LOG: not a log filter: {e}"))?,
            _ => EnvFilter::try_new(fallback)
                .map_err(|e| anyhow::anyhow!("log_level: not a log filter: {e}"))?,
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}
