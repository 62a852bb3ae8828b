//! How a source is registered with the gateway.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::mcp::{self, Relaying, UpstreamSpec};
use super::Source;
use crate::call::CallLimits;
use crate::catalog::Exposure;
use crate::downstream::Sessions;

/// How a source is registered: the source, the prefix of its names and the
/// limits the router applies to its calls.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub(crate) kind: SourceKind,
    /// `None` means `<name>__`, `Some("")` no prefix.
    pub prefix: Option<String>,
    pub limits: CallLimits,
    /// What of its lists clients see, and under which names.
    pub exposure: Exposure,
}

#[derive(Debug, Clone)]
pub(crate) enum SourceKind {
    /// An upstream MCP server, built and supervised by the gateway.
    Mcp(Box<UpstreamSpec>),
    Other(Arc<dyn Source>),
}

impl SourceKind {
    /// The source, at catalogue `index`: an MCP upstream is made here, with
    /// what its relay to the clients needs.
    pub(crate) fn into_source(
        self,
        index: usize,
        sessions: &Arc<Sessions>,
        relaying: &Relaying,
        stop: &CancellationToken,
    ) -> Arc<dyn Source> {
        match self {
            SourceKind::Mcp(spec) => mcp::upstream(index, *spec, sessions, relaying, stop),
            SourceKind::Other(source) => source,
        }
    }
}

impl SourceSpec {
    /// An upstream MCP server; its limits come from its spec.
    pub fn mcp(spec: UpstreamSpec) -> Self {
        let limits = CallLimits {
            timeout: Some(spec.timeout),
            max_in_flight: spec.max_in_flight,
            ..CallLimits::default()
        };
        Self {
            prefix: spec.prefix.clone(),
            kind: SourceKind::Mcp(Box::new(spec)),
            limits,
            exposure: Exposure::default(),
        }
    }

    /// Any other source, with the default limits and prefix.
    pub fn new(source: Arc<dyn Source>) -> Self {
        Self {
            kind: SourceKind::Other(source),
            prefix: None,
            limits: CallLimits::default(),
            exposure: Exposure::default(),
        }
    }

    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    pub fn with_limits(mut self, limits: CallLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The upstream MCP server this registers, if it is one.
    pub fn upstream(&self) -> Option<&UpstreamSpec> {
        match &self.kind {
            SourceKind::Mcp(spec) => Some(spec),
            SourceKind::Other(_) => None,
        }
    }

    pub fn name(&self) -> &str {
        match &self.kind {
            SourceKind::Mcp(spec) => &spec.name,
            SourceKind::Other(source) => source.name(),
        }
    }

    /// The prefix put before this source's tool and prompt names.
    pub fn effective_prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}__", self.name()),
        }
    }
}
