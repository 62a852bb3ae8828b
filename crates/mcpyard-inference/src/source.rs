//! The gateway's view of local models: a [`Source`] named `local` whose
//! tools are the dispatch table in `tools/`.
//!
//! With servers configured, the tools are always listed (a call to a server
//! that is down says so). With discovery alone, they are listed while a
//! discovered server answers: loopback is probed until one does, and it is
//! checked on until it goes away, so a first run without a model server
//! shows no tools that cannot work.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_gateway::{RouteError, Source, SourceEvents, SourceLists, SourceRequest, SourceSpec};
use mcpyard_proto::Payload;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::config::{InferenceConfig, InferenceConfigError};
use crate::engine::Inference;
use crate::tools::{self, Args};
use crate::SOURCE_NAME;

/// How often discovery probes again while no server answers.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// How often a discovered server is checked to be still there.
const CHECK_EVERY: Duration = Duration::from_secs(15);

/// Local inference servers as MCP tools.
#[derive(Debug, Clone)]
pub struct InferenceSource {
    inner: Arc<Inference>,
    /// Ends the watch of discovered servers when the source stops.
    stopped: CancellationToken,
}

impl InferenceSource {
    /// Checks the settings and builds the source. No server is contacted
    /// until the first call (or status request).
    pub fn new(config: InferenceConfig) -> Result<Self, InferenceConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inference::new(config)),
            stopped: CancellationToken::new(),
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

    /// Lists the tools while a discovered server answers, until the source
    /// stops: the first report at once (none found is a report too).
    async fn watch_discovered(&self, events: SourceEvents) {
        let registry = self.inner.registry();
        let mut listed: Option<bool> = None;
        loop {
            // Probes only while nothing is known (a failed call forgets
            // what was found); else a connection to each server found.
            let still = listed != Some(true) || registry.discovered_still_listen().await;
            let found = still && !self.inner.backends(false).await.is_empty();
            if listed != Some(found) {
                if found {
                    tracing::info!(
                        "an inference server answered: the local model tools are listed"
                    );
                }
                let tools = if found { self.tools() } else { Vec::new() };
                events.publish(SourceLists::tools(tools));
                listed = Some(found);
            }
            let wait = if found { CHECK_EVERY } else { PROBE_EVERY };
            tokio::select! {
                () = self.stopped.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

#[async_trait]
impl Source for InferenceSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn start(&self, events: SourceEvents) {
        let config = self.inner.config();
        if !config.backends.is_empty() || !config.enabled || !config.discovery_enabled() {
            events.publish(SourceLists::tools(self.tools()));
            return;
        }
        let this = self.clone();
        tokio::spawn(async move { this.watch_discovered(events).await });
    }

    async fn stop(&self) {
        self.stopped.cancel();
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
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
        Ok(outcome
            .unwrap_or_else(|e| {
                tracing::info!(tool, error = %e, "local tool call failed");
                e.into_result()
            })
            .into())
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
                "last_probe": self.inner.registry().last_probe().map(|p| json!({
                    "at": humantime::format_rfc3339_seconds(p.at).to_string(),
                    "found": p.found.iter().map(|(port, kind)| json!({"port": port, "kind": kind})).collect::<Vec<_>>(),
                })),
            },
            "message": if backends.is_empty() { Some(self.inner.no_backend_advice()) } else { None },
        })
    }
}
