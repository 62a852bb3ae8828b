//! The gateway's validated settings (the binary loads and checks files and
//! builds these).

use std::time::Duration;

use mcpyard_client::TransportSpec;

/// Everything the gateway needs to start.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The upstream MCP servers to aggregate.
    pub upstreams: Vec<UpstreamSpec>,
    /// Timeout for a client's answer to a relayed request (sampling...).
    pub client_request_timeout: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            upstreams: Vec::new(),
            client_request_timeout: Duration::from_secs(300),
        }
    }
}

/// One configured upstream MCP server.
#[derive(Debug, Clone)]
pub struct UpstreamSpec {
    /// The server's configured name (the key in the config file).
    pub name: String,
    /// Prefix for its tool and prompt names; `None` means `<name>__`,
    /// `Some("")` means no prefix.
    pub prefix: Option<String>,
    pub transport: TransportSpec,
    /// Per-call timeout.
    pub timeout: Duration,
}

impl UpstreamSpec {
    /// The prefix put before this server's names.
    pub fn effective_prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}__", self.name),
        }
    }
}

/// A configuration the gateway cannot start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Two sources expose the same name.
    #[error("name collision: `{name}` is offered by both `{first}` and `{second}`; set a `prefix` on one of them")]
    NameCollision {
        name: String,
        first: String,
        second: String,
    },
    #[error("server `{server}`: {reason}")]
    Invalid { server: String, reason: String },
}
