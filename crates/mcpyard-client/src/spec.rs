//! How to reach an MCP server.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The variables of the parent's environment every stdio server inherits,
/// as the reference SDKs' stdio clients do (the TypeScript SDK's list, plus
/// the locale, temporary directory and time zone). Anything else, the
/// parent's secrets included, must be asked for with `inherit_env` or given
/// with `env`.
pub const MINIMAL_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "TZ",
];

/// Where an MCP server lives and which transport reaches it.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio {
        /// The program to run, looked up in `PATH` if it has no slash.
        command: String,
        /// Its arguments, passed as they are (no shell).
        args: Vec<String>,
        /// Set in the child's environment, over anything inherited.
        env: BTreeMap<String, String>,
        /// Variables of the parent's environment passed on besides
        /// [`MINIMAL_ENV`]: exact names, `PREFIX*` for every name starting
        /// with `PREFIX`, or `*` for all of them. Empty: the minimal set only.
        inherit_env: Vec<String>,
        /// The child's working directory; `None`: the parent's.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (2025-03-26 and later): one endpoint for POST/GET/DELETE.
    StreamableHttp {
        /// The MCP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Sent with every HTTP request (`Authorization`, API keys...).
        headers: Vec<(String, String)>,
    },
    /// Legacy HTTP+SSE (2024-11-05): a GET stream announcing a POST endpoint.
    Sse {
        /// The SSE stream to GET, e.g. `http://127.0.0.1:3001/sse`.
        url: String,
        /// Sent with the GET and every POST (`Authorization`, API keys...).
        headers: Vec<(String, String)>,
    },
}

impl TransportSpec {
    /// A short description for logs and status, never carrying header values
    /// or environment values (they may hold secrets).
    ///
    /// Arguments are counted, not shown (`--token ${TOKEN}` is a common way
    /// to pass a secret), and a URL loses its user info and query string.
    pub fn describe(&self) -> String {
        match self {
            TransportSpec::Stdio { command, args, .. } => match args.len() {
                0 => format!("stdio: {command}"),
                1 => format!("stdio: {command} (1 argument)"),
                n => format!("stdio: {command} ({n} arguments)"),
            },
            TransportSpec::StreamableHttp { url, .. } => {
                format!("streamable-http: {}", redact_url(url))
            }
            TransportSpec::Sse { url, .. } => format!("sse: {}", redact_url(url)),
        }
    }
}

/// `scheme://host:port/path` of a URL: no credentials, query or fragment.
fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "(invalid URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_never_carry_arguments_credentials_or_queries() {
        let stdio = TransportSpec::Stdio {
            command: "npx".into(),
            args: vec!["server".into(), "--token".into(), "s3cret".into()],
            env: BTreeMap::from([("KEY".into(), "s3cret".into())]),
            inherit_env: vec!["TOKEN".into()],
            cwd: None,
        };
        assert_eq!(stdio.describe(), "stdio: npx (3 arguments)");
        let http = TransportSpec::StreamableHttp {
            url: "http://user:s3cret@127.0.0.1:3001/mcp?api_key=s3cret#x".into(),
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
        };
        let d = http.describe();
        assert_eq!(d, "streamable-http: http://127.0.0.1:3001/mcp");
        assert!(!d.contains("s3cret"));
    }
}
