//! An in-process client of a gateway, for the tests of sources: requests
//! go straight to [`Gateway::request`], as a front door would hand them
//! over, and notifications for a request come back on a channel.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpyard_proto::{ErrorObject, Message};
use serde_json::{json, Value};

use mcpyard_gateway::{Gateway, GatewayConfig, Identity, Outbound, Session, SourceSpec};

/// One initialized client session on a gateway of the given sources.
#[derive(Debug)]
pub struct InProcessClient {
    gateway: Gateway,
    session: Arc<Session>,
    next_id: AtomicI64,
    /// How long any one request may take before the test fails.
    timeout: Duration,
}

impl InProcessClient {
    /// Starts a gateway of these sources and initializes a session on it.
    /// Panics (the test fails) when either does not work.
    pub async fn start(sources: Vec<SourceSpec>, timeout: Duration) -> Self {
        Self::start_with(
            GatewayConfig {
                sources,
                ..GatewayConfig::default()
            },
            timeout,
        )
        .await
    }

    /// Starts a gateway of this configuration (policy, layers...) and
    /// initializes an anonymous session on it.
    pub async fn start_with(config: GatewayConfig, timeout: Duration) -> Self {
        let gateway = Gateway::start(config).await.expect("gateway starts");
        Self::join(gateway, Identity::anonymous(), timeout).await
    }

    /// Another client of the same gateway, initialized as `identity` (as
    /// a front door would after authenticating it).
    pub async fn join_as(&self, identity: Identity) -> Self {
        Self::join(self.gateway.clone(), identity, self.timeout).await
    }

    async fn join(gateway: Gateway, identity: Identity, timeout: Duration) -> Self {
        let session = Session::new_as(identity, None);
        gateway.register_session(session.clone());
        let client = Self {
            gateway,
            session,
            next_id: AtomicI64::new(1),
            timeout,
        };
        let init = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
                None,
            )
            .await;
        assert!(init.get("protocolVersion").is_some(), "{init}");
        client
    }

    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// A request id not used yet on this session.
    pub fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a request and returns its result; an error response fails
    /// the test. Notifications related to it go to `related`.
    pub async fn request(&self, method: &str, params: Value, related: Option<Outbound>) -> Value {
        match self.try_request(method, params, related).await {
            Ok(result) => result,
            Err(error) => panic!("expected a result for {method}, got {error:?}"),
        }
    }

    /// Sends a request and returns its result or its JSON-RPC error.
    pub async fn try_request(
        &self,
        method: &str,
        params: Value,
        related: Option<Outbound>,
    ) -> Result<Value, ErrorObject> {
        let id = self.next_id();
        let answer = tokio::time::timeout(
            self.timeout,
            self.gateway
                .request(&self.session, id.into(), method, Some(params), related),
        )
        .await
        .unwrap_or_else(|_| panic!("the gateway answered {method} within {:?}", self.timeout))
        .into_reply()
        .expect("a request gets a response");
        match answer {
            Message::Response { result, .. } => Ok(result.into_value()),
            Message::Error { error, .. } => Err(error),
            other => panic!("expected a response, got {other:?}"),
        }
    }

    /// Every tool of the first `tools/list` page.
    pub async fn tools(&self) -> Vec<Value> {
        let r = self.request("tools/list", json!({}), None).await;
        r["tools"].as_array().cloned().unwrap_or_default()
    }

    /// Calls a tool by its full name; returns the `CallToolResult`.
    pub async fn call(&self, name: &str, arguments: Value) -> Value {
        self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            None,
        )
        .await
    }

    /// Calls with a progress token; returns the result and the params of
    /// every progress notification sent meanwhile.
    pub async fn call_with_progress(&self, name: &str, arguments: Value) -> (Value, Vec<Value>) {
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let result = self
            .request(
                "tools/call",
                json!({"name": name, "arguments": arguments, "_meta": {"progressToken": "p1"}}),
                Some(tx),
            )
            .await;
        let mut notes = Vec::new();
        while let Ok(m) = rx.try_recv() {
            if let Message::Notification { method, params } = m {
                if method == "notifications/progress" {
                    notes.push(params.unwrap_or_default());
                }
            }
        }
        (result, notes)
    }

    /// Starts a `tools/call` with these params in the background; returns
    /// its request id and the task that yields the gateway's answer.
    pub fn spawn_call(
        &self,
        params: Value,
        related: Option<Outbound>,
    ) -> (i64, tokio::task::JoinHandle<Option<Message>>) {
        let id = self.next_id();
        let gateway = self.gateway.clone();
        let session = self.session.clone();
        let call = tokio::spawn(async move {
            gateway
                .request(&session, id.into(), "tools/call", Some(params), related)
                .await
                .into_reply()
        });
        (id, call)
    }

    /// Cancels a call started by [`InProcessClient::spawn_call`] as a client
    /// would, and returns the gateway's answer: none, as the specification
    /// wants for a cancelled request.
    pub async fn cancel_call(
        &self,
        id: i64,
        call: tokio::task::JoinHandle<Option<Message>>,
    ) -> Option<Message> {
        self.cancel(id).await;
        tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the cancelled call ended within 10 s")
            .expect("call task")
    }

    /// Tells the gateway the client cancelled request `id`.
    pub async fn cancel(&self, id: i64) {
        let cancel = Message::notification(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "test"})),
        );
        self.gateway.receive(&self.session, cancel).await;
    }

    /// The gateway's status tool's result.
    pub async fn status(&self) -> Value {
        self.call("mcpyard__status", json!({})).await
    }
}
