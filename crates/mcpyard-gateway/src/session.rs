//! A downstream client's session: what it negotiated, where to send it
//! messages it did not ask for, and the requests in flight either way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpyard_proto::{Envelope, ErrorObject, Message, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Where messages for a client go: its session stream (GET stream, legacy
/// SSE stream, stdout) or the response stream of one of its POSTs.
pub type Outbound = mpsc::Sender<Message>;

/// State of one downstream client.
#[derive(Debug)]
pub struct Session {
    id: String,
    /// Sessions of the stateless era live for one request and are never
    /// registered.
    stateless: bool,
    negotiated: Mutex<Negotiated>,
    /// The stream for messages not tied to a request (GET / SSE / stdout).
    stream: Mutex<Option<Outbound>>,
    /// Our requests to the client (sampling...), by the id we gave them.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    next_id: AtomicI64,
    /// The client's requests being served, so `notifications/cancelled`
    /// can stop them.
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Ended by DELETE, by the stream closing (stdio / SSE) or by shutdown.
    ended: CancellationToken,
    /// When the client last used the session (a request, or the end of one).
    last_active: Mutex<Instant>,
}

/// What the client told us at `initialize` (or per request, stateless).
#[derive(Debug, Clone, Default)]
pub struct Negotiated {
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_info: Value,
    /// The minimum level of `notifications/message` the client wants.
    pub log_level: Option<String>,
    pub initialized: bool,
}

impl Session {
    /// A new session with a fresh unguessable id.
    pub fn new(stream: Option<Outbound>) -> Arc<Self> {
        Arc::new(Self::build(false, stream))
    }

    /// A one-request session for the stateless era.
    pub fn stateless(protocol_version: &str, capabilities: Value) -> Arc<Self> {
        let s = Self::build(true, None);
        {
            let mut n = s.negotiated.lock().expect("session lock poisoned");
            n.protocol_version = protocol_version.to_owned();
            n.capabilities = capabilities;
            n.initialized = true;
        }
        Arc::new(s)
    }

    /// A one-request session for a stateless-era request that came on the
    /// connection of `parent` (stdio, or a transport's own session): it
    /// writes to the parent's stream and ends when the parent does.
    pub(crate) fn for_request(parent: &Session, envelope: Envelope) -> Arc<Self> {
        let mut s = Self::build(true, parent.stream());
        s.ended = parent.ended.child_token();
        let session = Arc::new(s);
        session.update(|n| {
            n.protocol_version = envelope.version;
            n.capabilities = envelope.capabilities;
            n.initialized = true;
        });
        session
    }

    fn build(stateless: bool, stream: Option<Outbound>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().simple().to_string(),
            stateless,
            negotiated: Mutex::new(Negotiated::default()),
            stream: Mutex::new(stream),
            pending: Mutex::default(),
            next_id: AtomicI64::new(1),
            in_flight: Mutex::default(),
            ended: CancellationToken::new(),
            last_active: Mutex::new(Instant::now()),
        }
    }

    /// Notes that the client used the session.
    pub(crate) fn touch(&self) {
        *self.last_active.lock().expect("session lock poisoned") = Instant::now();
    }

    /// How long the session has been idle: `None` while it is in use (a
    /// stream open, a request in flight).
    pub(crate) fn idle_for(&self) -> Option<std::time::Duration> {
        let busy = self.has_stream()
            || !self
                .in_flight
                .lock()
                .expect("session lock poisoned")
                .is_empty();
        (!busy).then(|| {
            self.last_active
                .lock()
                .expect("session lock poisoned")
                .elapsed()
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn is_stateless(&self) -> bool {
        self.stateless
    }

    pub fn negotiated(&self) -> Negotiated {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .clone()
    }

    pub fn protocol_version(&self) -> String {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .protocol_version
            .clone()
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut Negotiated)) {
        f(&mut self.negotiated.lock().expect("session lock poisoned"));
    }

    /// Whether the client declared `capabilities.<name>` (sampling,
    /// elicitation, roots).
    pub fn has_capability(&self, name: &str) -> bool {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .capabilities
            .get(name)
            .is_some_and(|v| !v.is_null())
    }

    /// Whether a `notifications/message` at `level` passes the level the
    /// client set with `logging/setLevel` (everything passes until it does).
    pub fn wants_log(&self, level: &str) -> bool {
        let n = self.negotiated.lock().expect("session lock poisoned");
        match &n.log_level {
            None => true,
            Some(min) => log_severity(level) >= log_severity(min),
        }
    }

    /// Attaches the session stream (a GET stream opened, or stdout).
    /// Returns false when one is already attached and still open.
    pub fn attach_stream(&self, tx: Outbound) -> bool {
        let mut slot = self.stream.lock().expect("session lock poisoned");
        if slot.as_ref().is_some_and(|s| !s.is_closed()) {
            return false;
        }
        *slot = Some(tx);
        true
    }

    /// The session stream, when one is attached.
    pub(crate) fn stream(&self) -> Option<Outbound> {
        self.stream.lock().expect("session lock poisoned").clone()
    }

    /// Whether a session stream is attached and open.
    pub fn has_stream(&self) -> bool {
        self.stream
            .lock()
            .expect("session lock poisoned")
            .as_ref()
            .is_some_and(|s| !s.is_closed())
    }

    /// Sends a message on `related` when given and open, else on the session
    /// stream. Returns false when neither could take it.
    pub async fn send(&self, msg: Message, related: Option<&Outbound>) -> bool {
        if let Some(tx) = related {
            if !tx.is_closed() {
                match tx.send(msg).await {
                    Ok(()) => return true,
                    Err(mpsc::error::SendError(m)) => return self.send_on_stream(m).await,
                }
            }
        }
        self.send_on_stream(msg).await
    }

    /// Queues a notification on the session stream without waiting; dropped
    /// when the stream is absent or full.
    pub fn try_notify(&self, msg: Message) {
        if let Some(tx) = self.stream.lock().expect("session lock poisoned").as_ref() {
            let _ = tx.try_send(msg);
        }
    }

    async fn send_on_stream(&self, msg: Message) -> bool {
        let tx = self.stream.lock().expect("session lock poisoned").clone();
        match tx {
            Some(tx) => tx.send(msg).await.is_ok(),
            None => false,
        }
    }

    /// Sends a request to the client and waits for its answer.
    pub async fn request_client(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<&Outbound>,
        timeout: Duration,
    ) -> Result<Value, ErrorObject> {
        let id = RequestId::String(format!(
            "mcpyard-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .expect("session lock poisoned")
            .insert(id.clone(), tx);
        let sent = self
            .send(Message::request(id.clone(), method, params), related)
            .await;
        let outcome = if !sent {
            Err(ErrorObject::internal(
                "the client has no open stream to receive the request",
            ))
        } else {
            tokio::select! {
                r = rx => r.unwrap_or_else(|_| Err(ErrorObject::internal("the client session ended"))),
                _ = tokio::time::sleep(timeout) => Err(ErrorObject::internal(format!("the client did not answer {method} within {timeout:?}"))),
                _ = self.ended.cancelled() => Err(ErrorObject::internal("the client session ended")),
            }
        };
        self.pending
            .lock()
            .expect("session lock poisoned")
            .remove(&id);
        outcome
    }

    /// Delivers a client's response to one of our requests. Returns false
    /// when no request of ours has that id.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match self
            .pending
            .lock()
            .expect("session lock poisoned")
            .remove(id)
        {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    pub(crate) fn begin_request(&self, id: &RequestId) -> CancellationToken {
        let token = self.ended.child_token();
        self.in_flight
            .lock()
            .expect("session lock poisoned")
            .insert(id.clone(), token.clone());
        token
    }

    pub(crate) fn finish_request(&self, id: &RequestId) {
        self.touch();
        self.in_flight
            .lock()
            .expect("session lock poisoned")
            .remove(id);
    }

    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if let Some(t) = self
            .in_flight
            .lock()
            .expect("session lock poisoned")
            .get(id)
        {
            t.cancel();
        }
    }

    /// Ends the session: in-flight requests are cancelled, waits fail.
    pub fn end(&self) {
        self.ended.cancel();
        *self.stream.lock().expect("session lock poisoned") = None;
    }

    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Resolves when the session ends.
    pub async fn ended(&self) {
        self.ended.cancelled().await
    }
}

/// RFC 5424 severities as MCP names them, least severe first.
pub(crate) fn log_severity(level: &str) -> usize {
    const LEVELS: [&str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    LEVELS.iter().position(|l| *l == level).unwrap_or(1)
}

/// Whether `level` is one of the eight MCP log levels.
pub(crate) fn is_log_level(level: &str) -> bool {
    matches!(
        level,
        "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency"
    )
}
