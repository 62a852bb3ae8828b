//! How an upstream MCP server is configured.

use std::sync::Arc;
use std::time::Duration;

use mcpyard_client::{SamplingPolicy, TransportSpec};

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
    /// How long the server may take to list its tools, resources and
    /// prompts once connected; past it, it is shown down and reconnected.
    pub list_timeout: Duration,
    /// Calls it may run at once; more wait for a free place.
    pub max_in_flight: usize,
    /// Whether this server's sampling requests may be answered by a local
    /// model; `None` (the default) never.
    pub sampling: Option<UpstreamSampling>,
    /// Credentials of an HTTP server (OAuth, with mcpyard-client's `oauth`
    /// feature): every request carries its token; `None` for none.
    pub http_auth: Option<Arc<dyn mcpyard_client::HttpAuth>>,
}

/// When and how a local model answers an upstream's sampling requests.
#[derive(Debug, Clone)]
pub struct UpstreamSampling {
    /// `true`: always answer locally; `false`: only when the client that
    /// made the call cannot sample.
    pub always: bool,
    /// What a request must pass before the local model sees it: the
    /// models that may answer (the first is the default; a model named in
    /// the request's hints is used when it is in the list; none listed: the
    /// inference source's recommended chat model) and the most tokens one
    /// answer may use, whatever the request asks. The same policy type an
    /// application gives `mcpyard-client`, so both enforce it alike.
    pub policy: SamplingPolicy,
}

impl UpstreamSpec {
    /// Default of [`UpstreamSpec::list_timeout`].
    pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(5);
    /// Default of [`UpstreamSpec::max_in_flight`].
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

    /// The prefix put before this server's names.
    pub fn effective_prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}__", self.name),
        }
    }
}
