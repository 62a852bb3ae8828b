//! The gateway's view of local models: a [`Source`] named `local` whose
//! tools are the dispatch table in `tools/`.

use std::sync::Arc;

use async_trait::async_trait;
use mcpyard_gateway::{RouteError, Source, SourceEvents, SourceLists, SourceRequest, SourceSpec};
use serde_json::{json, Value};

use crate::config::{InferenceConfig, InferenceConfigError};
use crate::engine::Inference;
use crate::tools::{self, Args};
use crate::SOURCE_NAME;

/// Local inference servers as MCP tools.
#[derive(Debug, Clone)]
pub struct InferenceSource {
    inner: Arc<Inference>,
}

impl InferenceSource {
    /// Checks the settings and builds the source. No server is contacted
    /// until the first call (or status request).
    pub fn new(config: InferenceConfig) -> Result<Self, InferenceConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inference::new(config)),
        })
    }

    /// The shared state the tools work with.
    pub(crate) fn engine(&self) -> &Inference {
        &self.inner
    }

    /// The tool name prefix from the settings (`local__` by default).
    pub fn prefix(&self) -> &str {
        &self.inner.config().prefix
    }

    /// The gateway registration: this source with its configured prefix.
    /// A model call may run as long as the backend allows (the inference
    /// settings bound each backend request).
    pub fn into_source_spec(self) -> SourceSpec {
        let prefix = self.prefix().to_owned();
        SourceSpec::new(Arc::new(self)).with_prefix(prefix)
    }

    fn tools(&self) -> Vec<Value> {
        if !self.inner.config().enabled {
            return Vec::new();
        }
        tools::TOOLS.iter().map(|t| (t.definition)()).collect()
    }
}

#[async_trait]
impl Source for InferenceSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn start(&self, events: SourceEvents) {
        events.publish(SourceLists::tools(self.tools()));
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Value, RouteError> {
        let arguments = request.take_arguments();
        let tool = request.name().unwrap_or_default().to_owned();
        let tool = tool.as_str();
        let ctx = request.context;
        let def = tools::find(tool)
            .filter(|_| self.inner.config().enabled)
            .ok_or_else(|| RouteError::UnknownName {
                kind: "tool",
                name: tool.to_owned(),
            })?;
        // Each tool's argument struct refuses what it does not declare.
        let outcome = match Args::new(arguments) {
            Ok(args) => {
                let call = tools::Call::new(ctx);
                (def.call)(&self.inner, args, &call).await
            }
            Err(e) => Err(e),
        };
        Ok(outcome.unwrap_or_else(|e| {
            tracing::info!(tool, error = %e, "local tool call failed");
            e.into_result()
        }))
    }

    async fn status(&self) -> Value {
        let config = self.inner.config();
        let listing = self.inner.listing(false).await;
        let backends: Vec<Value> = listing
            .backends
            .iter()
            .map(|b| {
                json!({
                    "name": b.backend,
                    "kind": b.kind,
                    "url": b.url,
                    "origin": b.origin,
                    "healthy": b.healthy,
                    "error": b.error,
                    "models_loaded": b.loaded.len(),
                    "models_downloaded": b.downloaded.len(),
                })
            })
            .collect();
        let healthy = listing.backends.iter().any(|b| b.healthy);
        json!({
            "name": SOURCE_NAME,
            "kind": "inference",
            "state": if !config.enabled { "disabled" } else if healthy { "ready" } else { "unavailable" },
            "transport": format!("local inference, {} backend(s)", backends.len()),
            "enabled": config.enabled,
            "healthy": config.enabled && healthy,
            "backends": backends,
            "discovery": {
                "enabled": config.discovery_enabled(),
                "ports": config.discover_ports,
            },
            "message": if backends.is_empty() { Some(self.inner.no_backend_advice()) } else { None },
        })
    }
}
