//! The gateway's validated settings (the binary loads and checks files and
//! builds these).

use std::sync::Arc;
use std::time::Duration;

use crate::governance::{Policy, RateLimiter};
use crate::router::Layer;
use crate::{SourceSpec, UpstreamSpec};

/// Everything the gateway needs to start.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The sources to aggregate, in catalogue order: upstream MCP servers
    /// ([`SourceSpec::mcp`]), local models, any other [`Source`](crate::Source).
    pub sources: Vec<SourceSpec>,
    /// Layers that see every routed call first, those the policy refuses
    /// and the rate limits stop included (the audit, metrics), outermost
    /// first. The order of the stack: the tracing span, these, the policy,
    /// the rate limits, [`GatewayConfig::layers`], the per-source cap and
    /// timeout.
    pub outer_layers: Vec<Arc<dyn Layer>>,
    /// Layers for the calls the policy and the rate limits let through
    /// (guardrails...), outermost first.
    pub layers: Vec<Arc<dyn Layer>>,
    /// The guardrails: the innermost of the configured layers on every
    /// routed call, and the redaction of every message a source sends a
    /// client outside a result (progress, logs, elicitation and sampling
    /// requests, resource updates).
    pub guard: Option<Arc<crate::Guard>>,
    /// Who may use which tool, prompt and resource: applied to the lists
    /// each identity sees and to every call.
    pub policy: Option<Arc<Policy>>,
    /// How often calls may come, per identity, tool or source.
    pub rate_limiter: Option<Arc<dyn RateLimiter>>,
    /// Timeout for a client's answer to a relayed request (sampling...).
    pub client_request_timeout: Duration,
    /// Items per page of `tools/list` and the other lists.
    pub page_size: usize,
    /// Answers sampling requests of upstreams that allow it.
    pub sampler: Option<Arc<dyn crate::Sampler>>,
    /// Where every routed call, refusal and locally answered sampling
    /// request is recorded; `None`: no audit.
    pub audit: Option<crate::AuditTrail>,
    /// A session with no open stream, nothing in flight and no task left is
    /// ended after this long without a request (its client gets 404 and
    /// initializes again): clients that vanish without DELETE would pile up
    /// otherwise.
    pub session_idle_timeout: Duration,
    /// Live sessions at most; past it the least recently active idle one
    /// makes room, and a new session is refused when none is idle.
    pub max_sessions: usize,
    /// Live sessions of one identity at most: past it that identity's own
    /// least recently active idle session makes room, so that one key
    /// cannot push every other identity's sessions out.
    pub max_sessions_per_identity: usize,
    /// Whether, while some tool is hidden (see [`Listing`](crate::Listing)),
    /// `tools/list` also shows the search tools (`mcpyard__list_tools`,
    /// `mcpyard__search_tools`, `mcpyard__call_tool`). Off: hidden tools
    /// are reachable only by calling them by name.
    pub search_tools: bool,
    /// Prometheus metrics of every routed call and of the gateway's state,
    /// read with [`Gateway::metrics_text`](crate::Gateway::metrics_text).
    /// `None`: nothing is counted.
    pub metrics: Option<Arc<crate::Metrics>>,
    /// MCP Apps (`io.modelcontextprotocol/ui`): declared to upstreams and
    /// clients, `ui://` URIs unique per source, apps' calls by their
    /// server's own tool names.
    pub apps: crate::AppsConfig,
    /// Where sessions are recorded so that other replicas can serve them
    /// ([`MemoryState`](crate::state::MemoryState): nowhere but here).
    pub state: Arc<dyn crate::state::StateBackend>,
    /// This replica's name in the status, the metrics and the audit.
    pub replica: String,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            sources: Vec::new(),
            outer_layers: Vec::new(),
            layers: Vec::new(),
            guard: None,
            policy: None,
            rate_limiter: None,
            client_request_timeout: Duration::from_secs(300),
            page_size: 200,
            sampler: None,
            audit: None,
            session_idle_timeout: Duration::from_secs(60 * 60),
            max_sessions: 10_000,
            max_sessions_per_identity: 1_000,
            search_tools: true,
            metrics: None,
            apps: crate::AppsConfig::default(),
            state: Arc::new(crate::state::MemoryState),
            replica: String::new(),
        }
    }
}

impl GatewayConfig {
    /// The upstream MCP servers among the sources.
    pub fn upstreams(&self) -> impl Iterator<Item = &UpstreamSpec> {
        self.sources.iter().filter_map(SourceSpec::upstream)
    }

    /// Checks what can be checked before connecting: unique source names,
    /// prefixes that cannot shadow each other or the gateway's own tools.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let builtin = crate::call::GATEWAY_SOURCE;
        let mut seen: Vec<(&str, String)> = vec![(builtin, crate::source::builtin::PREFIX.into())];
        for source in &self.sources {
            let name = source.name();
            let prefix = source.effective_prefix();
            let invalid = |reason: String| ConfigError::Invalid {
                server: name.to_owned(),
                reason,
            };
            if name.is_empty() {
                return Err(invalid("the server name is empty".into()));
            }
            if name == builtin {
                return Err(invalid(
                    "the name is reserved for the gateway's own tools".into(),
                ));
            }
            // Servers must not shadow each other. An in-process source (local
            // models) may share a name and prefix with a server, as it always
            // could: their names merge, and a name both offer is reported as
            // a collision by the status tool.
            let checked = source.upstream().is_some();
            if checked && seen.iter().any(|(n, _)| *n == name) {
                return Err(invalid("the name is used twice".into()));
            }
            if !crate::catalog::is_valid_tool_name(&format!("{prefix}x")) {
                return Err(invalid(format!(
                    "prefix `{prefix}` would make tool names the MCP spec rejects (allowed: A-Z a-z 0-9 _ - .)"
                )));
            }
            if checked && !prefix.is_empty() {
                if let Some((other, _)) = seen.iter().find(|(_, p)| *p == prefix) {
                    return Err(ConfigError::NameCollision {
                        name: format!("{prefix}*"),
                        first: (*other).to_owned(),
                        second: name.to_owned(),
                    });
                }
            }
            if checked {
                seen.push((name, prefix));
            }
        }
        Ok(())
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
