//! What the client does with messages the server sends unasked: one
//! [`ClientHandler`] for everything, or typed handlers for roots and
//! elicitation (and sampling, in the `sampling` module) that the client
//! routes to and advertises.

use std::sync::Arc;

use async_trait::async_trait;
use mcpyard_proto::{methods, ErrorObject, RequestId};
use serde::Serialize;
use serde_json::{json, Value};

use crate::sampling::{Sampler, SamplingPolicy};

/// Receives server-to-client requests and notifications.
///
/// `related` is the id of the client's own request that the message belongs
/// to, when the transport can tell (Streamable HTTP: it arrived on that
/// request's response stream; progress: from the token).
#[async_trait]
pub trait ClientHandler: Send + Sync + 'static {
    /// A request from the server (sampling, elicitation, roots, ping) that
    /// no typed handler of the [`ClientBuilder`](crate::ClientBuilder)
    /// takes. Runs in a task of its own; the result or error is sent back
    /// as the answer.
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject>;

    /// A notification from the server (progress, log message, list changed...).
    ///
    /// Awaited in arrival order, before any answer read after it is handed
    /// to its caller (so progress never trails its result): keep it quick,
    /// hand slow work to a task. One that takes longer than a tenth of a
    /// second is left to finish on its own while later messages go on.
    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    );

    /// The server forgot our session (it restarted, or the session expired)
    /// and the client started a new one. Whatever was learned in the old
    /// session (its lists, subscriptions) may be stale now.
    async fn on_session_restarted(&self) {}
}

/// Answers pings, refuses every other request, drops notifications.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopHandler;

#[async_trait]
impl ClientHandler for NoopHandler {
    async fn on_request(
        &self,
        method: &str,
        _params: Option<Value>,
        _related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        if method == mcpyard_proto::methods::PING {
            Ok(Value::Object(Default::default()))
        } else {
            Err(ErrorObject::method_not_found(method))
        }
    }

    async fn on_notification(&self, _: &str, _: Option<Value>, _: Option<RequestId>) {}
}

/// A root the client offers the server: a folder (or other URI) the server
/// may work in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// The root's URI (`file:///...`).
    pub uri: String,
    /// A name to show for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root without a name.
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
        }
    }

    /// The same root with a name to show.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// Answers the server's `roots/list`. A fixed `Vec<Root>` is one.
#[async_trait]
pub trait RootsHandler: Send + Sync + 'static {
    /// The roots to offer now.
    async fn list_roots(&self) -> Result<Vec<Root>, ErrorObject>;
}

#[async_trait]
impl RootsHandler for Vec<Root> {
    async fn list_roots(&self) -> Result<Vec<Root>, ErrorObject> {
        Ok(self.clone())
    }
}

/// A shared handler, so the application keeps a handle on it.
#[async_trait]
impl<T: RootsHandler> RootsHandler for Arc<T> {
    async fn list_roots(&self) -> Result<Vec<Root>, ErrorObject> {
        (**self).list_roots().await
    }
}

/// Answers the server's `elicitation/create`: asks the user for input.
#[async_trait]
pub trait ElicitationHandler: Send + Sync + 'static {
    /// `params` is the request's (`message`, and `requestedSchema` for a
    /// form or `url` and `elicitationId` for the URL mode); the answer is
    /// an `ElicitResult`: `{"action": "accept", "content": {...}}`,
    /// `{"action": "decline"}` or `{"action": "cancel"}`. `related` is the
    /// client's own request the server was serving, when the transport can
    /// tell.
    async fn elicit(&self, params: Value, related: Option<RequestId>)
        -> Result<Value, ErrorObject>;

    /// The `elicitation` capability to advertise: `{}` (forms), or
    /// `{"form": {}, "url": {}}` for a handler that also opens URLs
    /// (protocol 2025-11-25).
    fn capability(&self) -> Value {
        json!({})
    }
}

/// A shared handler, so the application keeps a handle on it.
#[async_trait]
impl<T: ElicitationHandler> ElicitationHandler for Arc<T> {
    async fn elicit(
        &self,
        params: Value,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        (**self).elicit(params, related).await
    }

    fn capability(&self) -> Value {
        (**self).capability()
    }
}

/// The handlers a client was built with: requests go to the typed handler
/// that takes them, the rest (and every notification) to `base`.
pub(crate) struct Handlers {
    pub(crate) base: Arc<dyn ClientHandler>,
    pub(crate) roots: Option<Arc<dyn RootsHandler>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) sampling: Option<(SamplingPolicy, Arc<dyn Sampler>)>,
}

impl Handlers {
    pub(crate) fn new(base: Arc<dyn ClientHandler>) -> Self {
        Self {
            base,
            roots: None,
            elicitation: None,
            sampling: None,
        }
    }

    /// `declared` (what the base handler answers) plus the capability of
    /// each typed handler configured, and nothing for those that are not.
    pub(crate) fn advertise(&self, declared: Value) -> Value {
        let mut capabilities = match declared {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({"listChanged": true}));
        }
        if let Some(elicitation) = &self.elicitation {
            capabilities.insert("elicitation".into(), elicitation.capability());
        }
        if let Some((_, sampler)) = &self.sampling {
            capabilities.insert("sampling".into(), sampler.capability());
        }
        Value::Object(capabilities)
    }

    /// The handler the connection uses: `base` itself when no typed
    /// handler is configured.
    pub(crate) fn into_handler(self) -> Arc<dyn ClientHandler> {
        if self.roots.is_none() && self.elicitation.is_none() && self.sampling.is_none() {
            return self.base;
        }
        Arc::new(self)
    }
}

#[async_trait]
impl ClientHandler for Handlers {
    async fn on_request(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        match method {
            methods::ROOTS_LIST => {
                if let Some(roots) = &self.roots {
                    let roots = roots.list_roots().await?;
                    return Ok(json!({ "roots": roots }));
                }
            }
            methods::ELICITATION_CREATE => {
                if let Some(elicitation) = &self.elicitation {
                    return elicitation
                        .elicit(params.unwrap_or_else(|| json!({})), related)
                        .await;
                }
            }
            methods::SAMPLING_CREATE_MESSAGE => {
                if let Some((policy, sampler)) = &self.sampling {
                    let admitted = policy.admit(params.unwrap_or_else(|| json!({}))).await?;
                    return sampler.create_message(admitted, related).await;
                }
            }
            _ => {}
        }
        self.base.on_request(method, params, related).await
    }

    async fn on_notification(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<RequestId>,
    ) {
        self.base.on_notification(method, params, related).await;
    }

    async fn on_session_restarted(&self) {
        self.base.on_session_restarted().await;
    }
}
