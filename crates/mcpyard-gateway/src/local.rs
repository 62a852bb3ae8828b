//! Sources that live inside the gateway process (local models, OpenAPI
//! documents): they offer tools like an upstream MCP server does, but are
//! called directly, with a context that lets them report progress and call
//! other tools of the catalogue.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcpyard_proto::{methods, ErrorObject, Message};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::{Outbound, Session};

/// A source of tools living in the gateway process.
#[async_trait]
pub trait LocalSource: Send + Sync + std::fmt::Debug + 'static {
    /// The source's name: its default tool prefix is `<name>__`.
    fn name(&self) -> &str;

    /// The tools it offers now, with unprefixed names. Read again whenever
    /// the source calls [`SourceHandle::tools_changed`].
    fn tools(&self) -> Vec<Value>;

    /// Called once when the gateway starts, with a handle to announce
    /// changes of its tools.
    fn attach(&self, handle: SourceHandle) {
        let _ = handle;
    }

    /// Calls one of its tools (unprefixed name) and returns a
    /// `CallToolResult`. Failures a model can fix by changing the call are
    /// `isError` results; a JSON-RPC error is for protocol faults only.
    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        ctx: ToolContext,
    ) -> Result<Value, ErrorObject>;

    /// A JSON summary for the status tool: must include `name` and `healthy`.
    async fn status(&self) -> Value;
}

/// Lets a local source tell the gateway its tools changed.
#[derive(Clone, Debug)]
pub struct SourceHandle {
    pub(crate) index: usize,
    pub(crate) refresh: tokio::sync::mpsc::UnboundedSender<usize>,
}

impl SourceHandle {
    /// Makes the gateway read [`LocalSource::tools`] again and tell clients
    /// when the catalogue changed.
    pub fn tools_changed(&self) {
        let _ = self.refresh.send(self.index);
    }
}

/// What a local tool call can use besides its arguments.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Cancelled when the client cancels the call, the call times out or the
    /// session ends.
    pub cancel: CancellationToken,
    pub progress: Progress,
    pub catalog: CatalogCaller,
}

impl ToolContext {
    /// A context for work the gateway does on its own behalf (answering an
    /// upstream's sampling request): no progress, no catalogue access.
    pub fn detached(cancel: CancellationToken) -> Self {
        Self {
            cancel: cancel.clone(),
            progress: Progress::none(),
            catalog: CatalogCaller {
                gateway: Weak::new(),
                session: Session::stateless(mcpyard_proto::LATEST_STATEFUL, json!({})),
                related: None,
                cancel,
            },
        }
    }
}

/// Progress notifications for the call, to the client that made it; a
/// no-op when the client sent no progress token.
#[derive(Debug, Clone)]
pub struct Progress {
    target: Option<(Arc<Session>, Option<Outbound>, Value)>,
}

impl Progress {
    pub(crate) fn new(session: &Arc<Session>, related: Option<Outbound>, params: &Value) -> Self {
        let token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        Self {
            target: token.map(|t| (session.clone(), related, t)),
        }
    }

    /// A reporter that reports nothing (tests, inner calls).
    pub fn none() -> Self {
        Self { target: None }
    }

    /// Whether the client asked for progress.
    pub fn is_active(&self) -> bool {
        self.target.is_some()
    }

    /// Sends `notifications/progress`. `progress` must grow between calls.
    pub async fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some((session, related, token)) = &self.target else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(t) = total {
            params["total"] = json!(t);
        }
        if let Some(m) = message {
            params["message"] = json!(m);
        }
        // Never waits: a client that stops reading must not hold up the
        // work (a model's stream) behind the progress.
        session.notify(
            Message::notification(methods::NOTIFICATION_PROGRESS, Some(params)),
            related.as_ref(),
        );
    }
}

/// Calls tools of the gateway's catalogue on behalf of a local tool (an
/// agent loop), as the client that made the outer call.
#[derive(Debug, Clone)]
pub struct CatalogCaller {
    pub(crate) gateway: Weak<crate::gateway::Inner>,
    pub(crate) session: Arc<Session>,
    pub(crate) related: Option<Outbound>,
    pub(crate) cancel: CancellationToken,
}

impl CatalogCaller {
    /// The tools of the catalogue (exposed names), as `tools/list` shows them.
    pub fn tools(&self) -> Vec<Value> {
        match self.gateway.upgrade() {
            Some(inner) => crate::gateway::Gateway::from_inner(inner).listed_tools(),
            None => Vec::new(),
        }
    }

    /// Calls a tool by its exposed name; the result is a `CallToolResult`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ErrorObject> {
        let Some(inner) = self.gateway.upgrade() else {
            return Err(ErrorObject::internal("the gateway is shutting down"));
        };
        tracing::info!(tool = name, "inner tool call");
        crate::gateway::Gateway::from_inner(inner)
            .call_tool(
                &self.session,
                json!({"name": name, "arguments": arguments}),
                self.related.clone(),
                self.cancel.child_token(),
            )
            .await
    }
}

/// Answers an upstream's `sampling/createMessage` with a local model, for
/// the upstreams whose [`SamplingPolicy`](crate::SamplingPolicy) allows it.
#[async_trait]
pub trait Sampler: Send + Sync + std::fmt::Debug + 'static {
    /// Serves the request's `params` within the policy (allowed models,
    /// token cap) and returns the `CreateMessageResult` and what it used.
    async fn create_message(
        &self,
        params: &Value,
        policy: &crate::SamplingPolicy,
    ) -> Result<(Value, SamplingUsage), ErrorObject>;
}

/// What a locally answered sampling request used, for the audit log.
#[derive(Debug, Clone, Default)]
pub struct SamplingUsage {
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}
