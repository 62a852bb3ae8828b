//! The gateway's view of one API: a [`Source`] whose tools are the
//! document's operations, called through `call/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcpyard_gateway::{
    CallLimits, ListKind, RouteError, SizeLimits, Source, SourceEvents, SourceLists, SourceRequest,
    SourceSpec,
};
use mcpyard_proto::Payload;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::call::Caller;
use crate::{ApiConfig, ApiDocument, DocVersion, Operation};

/// One OpenAPI / Swagger document's operations as MCP tools.
#[derive(Debug, Clone)]
pub struct OpenApiSource {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<ApiConfig>,
    /// A document given already loaded, published at start.
    given: Mutex<Option<ApiDocument>>,
    loaded: RwLock<Option<Loaded>>,
    /// Why the document could not be loaded (no credential in it: loading
    /// reads a file or a URL the configuration names).
    last_error: Mutex<Option<String>>,
    /// The last probe of the base URL, kept for [`PROBE_KEPT`]: a status
    /// asked often does not knock on the API each time.
    probed: tokio::sync::Mutex<Option<(Instant, Result<(), String>)>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for Inner {
    // The configuration's headers may hold keys: only names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApi")
            .field("name", &self.config.name)
            .field("spec", &shown_url(&self.config.spec))
            .field(
                "loaded",
                &self.loaded.read().map(|l| l.is_some()).unwrap_or(false),
            )
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone)]
struct Loaded {
    caller: Arc<Caller>,
    by_name: Arc<HashMap<String, usize>>,
}

/// Backoff between attempts to load a document that fails.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
/// How long a probe's outcome stands for the status.
const PROBE_KEPT: Duration = Duration::from_secs(30);

impl OpenApiSource {
    /// An API whose document is loaded at start (file or URL), retried
    /// with backoff while it fails.
    pub fn new(config: ApiConfig) -> Self {
        Self::build(config, None)
    }

    /// An API whose document the binary already loaded.
    pub fn with_document(config: ApiConfig, doc: ApiDocument) -> Self {
        Self::build(config, Some(doc))
    }

    fn build(config: ApiConfig, doc: Option<ApiDocument>) -> Self {
        Self {
            inner: Arc::new(Inner {
                config: Arc::new(config),
                given: Mutex::new(doc),
                loaded: RwLock::new(None),
                last_error: Mutex::new(None),
                probed: tokio::sync::Mutex::new(None),
                stop: CancellationToken::new(),
            }),
        }
    }

    /// The gateway registration: the configured prefix, each call bounded
    /// by the API's timeout, and `max_response_bytes` as the size layer's
    /// result limit for the source.
    pub fn into_source_spec(self) -> SourceSpec {
        let config = &self.inner.config;
        let limits = CallLimits {
            timeout: Some(config.timeout),
            sizes: SizeLimits {
                max_result: Some(config.max_response_bytes),
                ..SizeLimits::default()
            },
            ..CallLimits::default()
        };
        let prefix = self.inner.config.prefix.clone();
        SourceSpec::new(Arc::new(self))
            .with_prefix(prefix)
            .with_limits(limits)
    }

    fn loaded(&self) -> Option<Loaded> {
        self.inner
            .loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Inner {
    /// Whether the base URL answers, probed at most once per
    /// [`PROBE_KEPT`] (the lock makes concurrent statuses share one probe).
    async fn reachable(&self, caller: &Caller) -> Result<(), String> {
        let mut probed = self.probed.lock().await;
        if let Some((at, outcome)) = probed.as_ref() {
            if at.elapsed() < PROBE_KEPT {
                return outcome.clone();
            }
        }
        let outcome = caller.probe().await;
        if let Err(e) = &outcome {
            tracing::warn!(api = %self.config.name, error = %e, "API base URL does not answer");
        }
        *probed = Some((Instant::now(), outcome.clone()));
        outcome
    }

    fn publish(&self, doc: ApiDocument, events: &SourceEvents) {
        for name in crate::call::unplaced(&doc, &self.config.auth) {
            tracing::warn!(api = %self.config.name, key = %format!("auth.{name}"), "names no security scheme of the document: it is never sent");
        }
        let mut lists = SourceLists::default();
        lists.set_default_listing(crate::default_listing(&doc));
        let caller = Caller::new(self.config.clone(), doc);
        let doc = &caller.doc;
        lists.set(ListKind::Tools, doc.operations.iter().map(tool).collect());
        let by_name = doc
            .operations
            .iter()
            .enumerate()
            .map(|(i, op)| (op.name.clone(), i))
            .collect();
        *self.loaded.write().unwrap_or_else(|e| e.into_inner()) = Some(Loaded {
            caller: Arc::new(caller),
            by_name: Arc::new(by_name),
        });
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = None;
        events.publish(lists);
    }

    async fn load_until_loaded(self: Arc<Self>, events: SourceEvents) {
        let mut wait = FIRST_RETRY;
        loop {
            let options = crate::LoadOptions {
                rename: self.config.rename.clone(),
                prefix_len: self.config.prefix.len(),
            };
            match crate::load(&self.config.spec, &options).await {
                Ok(doc) => {
                    tracing::info!(api = %self.config.name, operations = doc.operations.len(), "API document loaded");
                    self.publish(doc, &events);
                    return;
                }
                Err(e) => {
                    let message = e
                        .to_string()
                        .replace(&self.config.spec, &shown_url(&self.config.spec));
                    tracing::warn!(api = %self.config.name, error = %message, retry_in = ?wait, "API document not loaded");
                    *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
                    // Reported as down so the start-up hold does not wait
                    // for a document that may never come.
                    events.down();
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.stop.cancelled() => return,
            }
            wait = (wait * 2).min(LAST_RETRY);
        }
    }
}

/// A URL as status and logs show it: without user, password or query
/// (any of them may carry a key); anything else as it is.
fn shown_url(text: &str) -> String {
    match url::Url::parse(text) {
        Ok(mut url) if url.has_host() => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            if url.query().is_some() {
                url.set_query(Some("redacted"));
            }
            url.to_string()
        }
        _ => text.to_owned(),
    }
}

/// The `tools/list` entry of an operation.
fn tool(op: &Operation) -> Value {
    let title = op.summary.clone().unwrap_or_else(|| {
        let words = op.name.replace('_', " ");
        let mut chars = words.chars();
        chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    });
    let read_only = op.method == http::Method::GET || op.method == http::Method::HEAD;
    let mut tool = json!({
        "name": op.name,
        "title": title,
        "description": op.tool_description,
        "inputSchema": op.input_schema,
        "annotations": {
            "title": title,
            "readOnlyHint": read_only,
            "destructiveHint": op.method == http::Method::DELETE,
            "openWorldHint": true,
        },
    });
    if let Some(schema) = &op.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    tool
}

#[async_trait]
impl Source for OpenApiSource {
    fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn start(&self, events: SourceEvents) {
        let given = self
            .inner
            .given
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match given {
            Some(doc) => self.inner.publish(doc, &events),
            None => {
                tokio::spawn(self.inner.clone().load_until_loaded(events));
            }
        }
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        if request.method != mcpyard_proto::methods::TOOLS_CALL {
            return Err(RouteError::InvalidParams(format!(
                "API `{}` offers tools only, not {}",
                self.inner.config.name, request.method
            )));
        }
        let arguments = request.take_arguments();
        let name = request.name().unwrap_or_default().to_owned();
        let Some(loaded) = self.loaded() else {
            let reason = self
                .inner
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .map(|e| format!(": its document is not loaded ({e})"))
                .unwrap_or_default();
            return Err(RouteError::Unavailable {
                server: self.inner.config.name.clone(),
                reason,
            });
        };
        let Some(&index) = loaded.by_name.get(&name) else {
            return Err(RouteError::UnknownName { kind: "tool", name });
        };
        Ok(loaded
            .caller
            .call(index, arguments, &request.context)
            .await
            .into())
    }

    async fn status(&self) -> Value {
        let config = &self.inner.config;
        let last_error = self
            .inner
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let loaded = self.loaded();
        let document = loaded.as_ref().map(|l| {
            let doc = &l.caller.doc;
            json!({
                "origin": shown_url(&doc.origin),
                "title": doc.title,
                "version": match doc.version {
                    DocVersion::Swagger2 => "swagger 2.0",
                    DocVersion::OpenApi30 => "openapi 3.0",
                    DocVersion::OpenApi31 => "openapi 3.1",
                },
            })
        });
        let operations = loaded.as_ref().map_or(0, |l| l.caller.doc.operations.len());
        let base_url = config.base_url.as_deref().map(shown_url).or_else(|| {
            loaded
                .as_ref()
                .and_then(|l| l.caller.doc.servers.first().cloned())
        });
        let reachable = match &loaded {
            Some(l) => Some(self.inner.reachable(&l.caller).await),
            None => None,
        };
        let state = match &reachable {
            None => "loading",
            Some(Err(_)) => "unreachable",
            Some(Ok(())) => "ready",
        };
        let last_error = last_error.or_else(|| reachable.clone().and_then(Result::err));
        let mut status = json!({
            "name": config.name,
            "kind": "openapi",
            "healthy": state == "ready",
            "state": state,
            "reachable": reachable.as_ref().map(Result::is_ok),
            "document": document,
            "operations": operations,
            "base_url": base_url,
            "last_error": last_error,
            // What the status tool's text line shows.
            "transport": format!("OpenAPI, {operations} operation(s)"),
            "error": last_error,
        });
        if let Some(l) = &loaded {
            l.caller.scrub_value(&mut status);
        }
        status
    }

    fn stops_itself(&self) -> bool {
        // Each call ends itself at its deadline or cancellation, with an
        // `isError` result naming the API.
        true
    }

    async fn stop(&self) {
        self.inner.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn shown_urls_lose_what_may_hold_a_key() {
        assert_eq!(
            shown_url("https://ann:pw@api.example/spec.json?key=k1"),
            "https://api.example/spec.json?redacted"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        assert_eq!(shown_url("./specs/api.yaml"), "./specs/api.yaml");
    }
}
