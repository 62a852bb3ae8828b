//! The command line: what each subcommand takes. Parsing only; the work is
//! in `commands`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::DEFAULT_LISTEN;
use crate::logging::LogFormat;

/// `mcpyard --version`: the release and the commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MCPYARD_COMMIT"),
    ")"
);

/// One MCP endpoint for your local MCP servers, models and HTTP APIs.
#[derive(Debug, Parser)]
#[command(name = "mcpyard", version = VERSION, propagate_version = true)]
pub(crate) struct Cli {
    /// Log filter for stderr (`info`, `debug`, `mcpyard_gateway=trace,info`...).
    /// Overrides RUST_LOG and the config's `log_level`.
    #[arg(long, global = true, value_name = "FILTER")]
    pub(crate) log_level: Option<String>,

    /// How log lines are written on stderr: `text`, or `json` (one object
    /// per line, for a log collector).
    #[arg(
        long,
        global = true,
        env = "MCPYARD_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub(crate) log_format: LogFormat,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the gateway over HTTP: Streamable HTTP on /mcp, legacy HTTP+SSE on /sse.
    Serve(ServeArgs),
    /// Serve the gateway on stdin/stdout, for clients that start it as a
    /// process (Claude Desktop, VS Code, Cursor).
    Stdio(StdioArgs),
    /// Validate a configuration file and print a summary of its servers.
    Check(CheckArgs),
    /// List the tools of a running gateway, or of one configured server.
    List(ListArgs),
    /// Call a tool on a running gateway, or on one configured server.
    Call(CallArgs),
    /// Log in to a configured server behind OAuth (authorization code +
    /// PKCE) and save its tokens for the gateway.
    Login(LoginArgs),
    /// Read the audit trail (`[audit] file`, rotated files included), filtered.
    Audit(AuditArgs),
    /// Print a shell completion script: `mcpyard completions bash >
    /// ~/.local/share/bash-completion/completions/mcpyard` (or zsh, fish,
    /// elvish, powershell).
    Completions(CompletionsArgs),
    /// Put mcpyard in Claude Desktop's, Cursor's or VS Code's MCP
    /// configuration, moving the servers it had there behind mcpyard (into
    /// mcpyard's own file); both files are backed up first. `--dry-run`
    /// prints the change as a diff.
    InstallClient(InstallClientArgs),
}

/// The MCP clients `install-client` knows the files of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ClientKind {
    /// Claude Desktop (`claude_desktop_config.json`).
    Claude,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
    /// VS Code (the workspace's `.vscode/mcp.json`).
    Vscode,
}

#[derive(Debug, Args)]
pub(crate) struct InstallClientArgs {
    /// The client whose configuration to change.
    #[arg(value_enum)]
    pub(crate) client: ClientKind,
    /// The client's file, if not where the client keeps it.
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// mcpyard's TOML file the servers move to, created if missing
    /// (default: $XDG_CONFIG_HOME/mcpyard/mcpyard.toml, else
    /// ~/.config/mcpyard/mcpyard.toml).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print what would change, as a diff (environment and header values
    /// masked), and write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Point the client at a gateway already serving at this URL instead
    /// of starting `mcpyard stdio` (Cursor, VS Code).
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Configuration file whose `[audit] file` to read.
    #[arg(
        long,
        short,
        env = "MCPYARD_CONFIG",
        value_name = "FILE",
        conflicts_with = "file",
        required_unless_present = "file"
    )]
    pub(crate) config: Option<PathBuf>,
    /// The audit file itself (its rotated `.1`, `.2`... are read too).
    #[arg(long, value_name = "PATH")]
    pub(crate) file: Option<PathBuf>,
    /// Only calls by this identity (key name, token subject, local user).
    #[arg(long, value_name = "NAME")]
    pub(crate) identity: Option<String>,
    /// Only calls of this tool (its name as clients see it; `*` and `?` wildcards).
    #[arg(long, value_name = "NAME")]
    pub(crate) tool: Option<String>,
    /// Only calls to this source (server, API or local models).
    #[arg(long, value_name = "NAME")]
    pub(crate) source: Option<String>,
    /// Only calls that ended so: ok, isError, error, refused or limited.
    #[arg(long, value_name = "OUTCOME", value_parser = ["ok", "isError", "error", "refused", "limited"])]
    pub(crate) outcome: Option<String>,
    /// Only records since a time: an RFC 3339 time (2026-01-31T12:00:00Z) or a
    /// duration back from now (30m, 2h, 7d).
    #[arg(long, value_name = "WHEN")]
    pub(crate) since: Option<String>,
    /// Print the matching records as JSON lines instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Configuration file (mcpyard.toml, or a Claude Desktop / Cursor / VS
    /// Code JSON file). Without it: no upstream servers, the gateway's own
    /// tools only.
    #[arg(long, short, env = "MCPYARD_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    // The help is built so the default address is spelled only in config.
    #[arg(
        long,
        value_name = "HOST:PORT",
        value_parser = parse_listen,
        help = format!("Address to listen on, overriding the config's `listen` (default {DEFAULT_LISTEN})")
    )]
    pub(crate) listen: Option<SocketAddr>,

    /// API key clients must send as `Authorization: Bearer <key>`,
    /// overriding the config's `api_key` and MCPYARD_API_KEY (which set it
    /// too, in that order, and do not show in `ps`).
    #[arg(long, value_name = "KEY")]
    pub(crate) api_key: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct StdioArgs {
    /// Configuration file. Without it: no upstream servers.
    #[arg(long, short, env = "MCPYARD_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Configuration file to validate. Without it: the embedded default
    /// `serve` runs without one.
    #[arg(long, short, env = "MCPYARD_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Also start the configured sources and report, per source, whether it
    /// is up, its tools listed and hidden, and `expose` names matching no
    /// tool (exit code 1 if any is down or has one); then stop them.
    #[arg(long)]
    pub(crate) connect: bool,
}

/// Which MCP server `list` and `call` talk to.
#[derive(Debug, Args)]
pub(crate) struct Target {
    #[arg(
        long,
        conflicts_with_all = ["config", "server"],
        help = format!(
            "URL of a running gateway or any MCP server (Streamable HTTP; a path \
             ending in /sse means legacy HTTP+SSE). Default: http://{DEFAULT_LISTEN}/mcp"
        )
    )]
    pub(crate) url: Option<String>,

    /// Configuration file holding the server named by --server.
    #[arg(long, short, requires = "server", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Talk to this configured server directly instead of to a gateway.
    #[arg(long, requires = "config", value_name = "NAME")]
    pub(crate) server: Option<String>,

    /// API key of the gateway, sent as `Authorization: Bearer <key>` with --url.
    #[arg(
        long,
        env = "MCPYARD_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub(crate) api_key: Option<String>,

    /// How long to wait for the server's answer (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Option<Duration>,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) target: Target,

    /// Print the raw JSON of the tools instead of a table.
    #[arg(long, alias = "raw")]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// Name of the tool to call.
    pub(crate) tool: String,

    /// An argument as KEY=VALUE; VALUE is read as JSON when it parses
    /// (`42`, `true`, `[1,2]`, `{"a":1}`, `"quoted"`), else taken as a string.
    /// Repeat for several.
    #[arg(long = "arg", short = 'a', value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(crate) args: Vec<(String, String)>,

    /// All arguments as one JSON object; --arg values are added on top.
    #[arg(long = "json", value_name = "OBJECT")]
    pub(crate) json_args: Option<String>,

    #[command(flatten)]
    pub(crate) target: Target,

    /// Print the raw JSON result instead of its content.
    #[arg(long)]
    pub(crate) raw: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The configured server to log in to (its `[servers.NAME.oauth]`).
    pub(crate) server: String,

    /// Configuration file holding the server.
    #[arg(long, short, env = "MCPYARD_CONFIG", value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// Open no browser: print the address to log in at, and read the
    /// address the browser was sent back to (or its code) from stdin.
    #[arg(long)]
    pub(crate) no_browser: bool,

    /// How long to wait for the login to come back (e.g. 5m).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "5m")]
    pub(crate) timeout: Duration,
}

fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    crate::config::parse_listen(s).ok_or_else(|| {
        format!("expected HOST:PORT with an IP address or `localhost`, e.g. {DEFAULT_LISTEN}")
    })
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err("expected KEY=VALUE".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn call_takes_args_json_and_a_target() {
        let cli = Cli::try_parse_from([
            "mcpyard",
            "call",
            "echo",
            "--arg",
            "message=hi",
            "-a",
            "n=2",
            "--json",
            r#"{"x":1}"#,
            "--url",
            "http://127.0.0.1:1/mcp",
            "--raw",
        ])
        .unwrap();
        let Command::Call(c) = cli.command else {
            panic!("expected call");
        };
        assert_eq!(c.tool, "echo");
        assert_eq!(
            c.args,
            [("message".into(), "hi".into()), ("n".into(), "2".into())]
        );
        assert_eq!(c.json_args.as_deref(), Some(r#"{"x":1}"#));
        assert!(c.raw);
    }

    #[test]
    fn url_and_config_exclude_each_other() {
        assert!(Cli::try_parse_from([
            "mcpyard",
            "list",
            "--url",
            "http://x/",
            "--config",
            "a.toml",
            "--server",
            "s"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["mcpyard", "list", "--config", "a.toml"]).is_err());
        assert!(Cli::try_parse_from(["mcpyard", "list", "--server", "s"]).is_err());
        assert!(
            Cli::try_parse_from(["mcpyard", "list", "--config", "a.toml", "--server", "s"]).is_ok()
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(Cli::try_parse_from(["mcpyard", "call", "t", "--arg", "novalue"]).is_err());
        assert!(Cli::try_parse_from(["mcpyard", "serve", "--listen", "nowhere"]).is_err());
        assert!(Cli::try_parse_from(["mcpyard", "list", "--timeout", "soon"]).is_err());
        assert!(Cli::try_parse_from(["mcpyard", "--log-format", "yaml", "check"]).is_err());
        assert!(Cli::try_parse_from(["mcpyard", "completions", "tcsh"]).is_err());
        // Without a file, `check` checks the embedded default.
        assert!(Cli::try_parse_from(["mcpyard", "check"]).is_ok());
    }

    #[test]
    fn login_takes_a_server_a_config_and_no_browser() {
        let cli = Cli::try_parse_from([
            "mcpyard",
            "login",
            "github",
            "--config",
            "m.toml",
            "--no-browser",
        ])
        .unwrap();
        let Command::Login(l) = cli.command else {
            panic!("expected login");
        };
        assert_eq!(l.server, "github");
        assert!(l.no_browser);
        assert_eq!(l.timeout, Duration::from_secs(300));
        assert!(Cli::try_parse_from(["mcpyard", "login", "--config", "m.toml"]).is_err());
    }
}
