//! How a source is registered with the gateway.

use std::hash::{Hash as _, Hasher as _};
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
    /// A hash of what the source is made from (see [`SourceSpec::fingerprint`]).
    fingerprint: Option<u64>,
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
        // Its credentials are left out: what they are made from is the
        // configuration's to add (`with_fingerprint`).
        let fingerprint = settings_hash(&(
            &spec.name,
            &spec.transport,
            spec.timeout,
            spec.list_timeout,
            spec.max_in_flight,
            &spec.sampling,
        ));
        Self {
            prefix: spec.prefix.clone(),
            kind: SourceKind::Mcp(Box::new(spec)),
            limits,
            exposure: Exposure::default(),
            fingerprint: Some(fingerprint),
        }
    }

    /// Any other source, with the default limits and prefix.
    pub fn new(source: Arc<dyn Source>) -> Self {
        Self {
            kind: SourceKind::Other(source),
            prefix: None,
            limits: CallLimits::default(),
            exposure: Exposure::default(),
            fingerprint: None,
        }
    }

    /// Adds what the source is made from to its fingerprint: settings it
    /// was built from that the spec does not show (an upstream's OAuth
    /// settings, an API's or the local models' configuration).
    pub fn with_fingerprint(mut self, made_from: &impl std::fmt::Debug) -> Self {
        let made_from = settings_hash(made_from);
        self.fingerprint = Some(match self.fingerprint {
            Some(own) => settings_hash(&(own, made_from)),
            None => made_from,
        });
        self
    }

    /// What tells whether a reload changed this source: two specs with
    /// the same fingerprint make the same source (with its prefix and
    /// limits), so a reload keeps it running and only gives it the new
    /// exposure. `None` (a source handed over ready-made, with nothing it
    /// was made from): a reload replaces it.
    pub fn fingerprint(&self) -> Option<u64> {
        let own = self.fingerprint?;
        Some(settings_hash(&(own, &self.prefix, &self.limits)))
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

/// A hash of `value`'s debug form, to tell whether settings changed: they
/// hold types that are neither `Hash` nor `Eq` (durations inside enums,
/// JSON values), and the text itself, which may hold secrets, is never
/// kept.
pub fn settings_hash(value: &impl std::fmt::Debug) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{value:?}").hash(&mut hasher);
    hasher.finish()
}
