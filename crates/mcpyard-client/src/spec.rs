//! How to reach an MCP server.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where an MCP server lives and which transport reaches it.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the gateway's own environment.
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (2025-03-26 and later): one endpoint for POST/GET/DELETE.
    StreamableHttp {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// Legacy HTTP+SSE (2024-11-05): a GET stream announcing a POST endpoint.
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl TransportSpec {
    /// A short description for logs and status, never carrying header values
    /// or environment values (they may hold secrets).
    pub fn describe(&self) -> String {
        match self {
            TransportSpec::Stdio { command, args, .. } => {
                format!("stdio: {} {}", command, args.join(" "))
            }
            TransportSpec::StreamableHttp { url, .. } => format!("streamable-http: {url}"),
            TransportSpec::Sse { url, .. } => format!("sse: {url}"),
        }
    }
}
