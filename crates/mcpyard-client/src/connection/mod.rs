//! One live connection of the MCP client, one `initialize` (or, in the 2026-07-28
//! era, one `server/discover` and an envelope on every request), many
//! concurrent requests.
//!
//! Requests are multiplexed by integer id over the single connection; a
//! pending map of oneshot senders pairs answers with callers. One dispatcher
//! task takes what the transport read, in order: answers wake their caller,
//! progress with a token the caller registered goes to its callback, other
//! notifications go to the handler (awaited, to keep their order, for up to
//! a tenth of a second, then left to finish in a task), requests from the
//! server go to the handler in a task of their own (a slow handler must never
//! stall the reader) and their answer is sent back. When the
//! transport dies every pending request fails at once with
//! [`ClientError::Closed`].
//!
//! In the 2026-07-28 era there is no session: a request that needs the
//! client (sampling, elicitation, roots) is answered `input_required`; the
//! client answers the input requests through the same handler that answers
//! server requests in the handshake era, and retries. List changes arrive
//! on a `subscriptions/listen` stream and reach the handler like any
//! notification.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mcpyard_proto::envelope::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use mcpyard_proto::{methods, Message, Payload, RequestId};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::link::Link;
use crate::tool_headers::ToolTable;
use crate::transport::{SendScope, Transport};
use crate::{ClientError, ClientHandler, TransportSpec};
use crate::{
    ConnectOptions, EraPolicy, ProgressCallback, RequestOptions, LEGACY_SSE_PROTOCOL_VERSION,
    MAX_LIST_PAGES, MODERN_PROTOCOL_VERSION,
};

mod dispatch;
mod era;
mod list_page;
mod rounds;
mod shared;
mod waits;

use dispatch::dispatch;
use era::{
    listen_filter, offers_modern, refuses_the_handshake, request_envelope, with_envelope,
    ANSWERED_MODERN,
};
use list_page::ListPage;
use shared::{Inner, Owner, PendingGuard, ProgressGuard, Shared};
use waits::{
    until, until_cancelled, CANCEL_SEND_TIMEOUT, DISCOVER_TIMEOUT, LISTEN_RETRY, LISTEN_RETRY_CAP,
};

/// One live connection of an [`McpClient`](crate::McpClient), from the
/// moment its transport is open. Cheap to clone; all clones share it.
/// Dropping the last owning clone closes it at once (a child process group
/// is killed).
#[derive(Clone)]
pub(crate) struct Connection {
    inner: Arc<Inner>,
    /// Held by the application's handles only: the client's own background
    /// work (the listen stream) must not keep the connection open.
    _owner: Option<Arc<Owner>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("label", &self.inner.shared.label)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Opens the transport, runs `initialize` + `notifications/initialized`
    /// (with [`EraPolicy::Auto`], `server/discover` first: a server that
    /// offers 2026-07-28 is spoken to in that era, any other answer falls
    /// back to `initialize`).
    ///
    /// The whole of it is bounded by `options.connect_timeout`; on any
    /// failure the transport is shut down (a child process is killed and
    /// reaped) before the error is returned.
    pub(crate) async fn connect(
        spec: TransportSpec,
        handler: Arc<dyn ClientHandler>,
        options: ConnectOptions,
    ) -> Result<Self, ClientError> {
        if options.era != EraPolicy::HandshakeFirst {
            return Self::connect_once(spec, handler, options).await;
        }
        let first = Self::connect_once(spec.clone(), handler.clone(), options.clone()).await;
        match first {
            Err(e) if refuses_the_handshake(&e) => {
                tracing::debug!(target: "mcpyard::upstream", server = %options.label, "the server refused the handshake ({e}); trying 2026-07-28");
                let options = ConnectOptions {
                    era: EraPolicy::Auto,
                    ..options
                };
                Self::connect_once(spec, handler, options).await
            }
            other => other,
        }
    }

    async fn connect_once(
        spec: TransportSpec,
        handler: Arc<dyn ClientHandler>,
        options: ConnectOptions,
    ) -> Result<Self, ClientError> {
        let deadline = tokio::time::Instant::now() + options.connect_timeout;
        let version = match spec {
            TransportSpec::Sse { .. } => LEGACY_SSE_PROTOCOL_VERSION.to_owned(),
            _ => options.protocol_version.clone(),
        };
        let era = match spec {
            TransportSpec::Sse { .. } => EraPolicy::Handshake,
            _ => options.era,
        };
        let described = spec.describe();
        let closed = CancellationToken::new();
        let (link, rx) = Link::new(&options.label, closed.clone());
        let link_answers = link.answers().clone();
        let opened = tokio::time::timeout_at(
            deadline,
            Transport::open(
                spec,
                link,
                options.connect_timeout,
                options.http_auth.clone(),
            ),
        )
        .await
        .map_err(|_| ClientError::Timeout(options.connect_timeout))
        .and_then(|r| r);
        let transport = match opened {
            Ok(t) => t,
            Err(e) => {
                // Stops whatever the transport had already started.
                closed.cancel();
                return Err(e);
            }
        };
        let shared = Arc::new(Shared {
            answers: link_answers,
            closed,
            handler,
            label: options.label.clone(),
            listen_id: AtomicI64::new(0),
            progress: Mutex::new(HashMap::new()),
            next_progress_token: AtomicI64::new(1),
            close_reason: Mutex::new(None),
        });
        let inner = Arc::new(Inner {
            shared: shared.clone(),
            transport,
            next_id: AtomicI64::new(1),
            init_result: OnceLock::new(),
            envelope: OnceLock::new(),
            tools: Mutex::new(ToolTable::default()),
        });
        tokio::spawn(dispatch(rx, shared.clone(), Arc::downgrade(&inner)));
        let client = Connection {
            inner,
            _owner: Some(Arc::new(Owner(shared))),
        };

        let connected = match era {
            EraPolicy::Auto => client.negotiate(&version, &options, deadline).await,
            EraPolicy::Handshake => client.handshake(&version, &options, deadline).await,
            // Decided by `connect`: the handshake is tried first.
            EraPolicy::HandshakeFirst => client.handshake(&version, &options, deadline).await,
        };
        match connected {
            Ok(()) => {
                tracing::info!(target: "mcpyard::upstream", server = %options.label, "connected ({described})");
                Ok(client)
            }
            Err(e) => {
                let e = client.inner.shared.explain(e);
                client.shutdown().await;
                Err(e)
            }
        }
    }

    /// Probes with `server/discover`: a result offering 2026-07-28 is
    /// adopted; a JSON-RPC error, an HTTP 4xx without one, or a result
    /// without that version means a server of the handshake era.
    async fn negotiate(
        &self,
        version: &str,
        options: &ConnectOptions,
        deadline: tokio::time::Instant,
    ) -> Result<(), ClientError> {
        let legacy_why = match self.probe_modern(options, deadline).await? {
            None => return Ok(()),
            Some(why) => why,
        };
        tracing::debug!(target: "mcpyard::upstream", server = %options.label, "using the handshake: {legacy_why}");
        self.handshake(version, options, deadline).await
    }

    /// Sends `server/discover` and adopts the 2026-07-28 era when the
    /// result offers it (`None`); otherwise says why not. Transport
    /// failures and the connect deadline are errors.
    async fn probe_modern(
        &self,
        options: &ConnectOptions,
        deadline: tokio::time::Instant,
    ) -> Result<Option<String>, ClientError> {
        let mut envelope = Map::new();
        envelope.insert(PROTOCOL_VERSION_KEY.into(), json!(MODERN_PROTOCOL_VERSION));
        envelope.insert(CLIENT_CAPABILITIES_KEY.into(), options.capabilities.clone());
        envelope.insert(
            CLIENT_INFO_KEY.into(),
            json!({"name": options.client_name, "version": options.client_version}),
        );
        let discover = || async {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            self.exchange(
                methods::SERVER_DISCOVER,
                Some(json!({ "_meta": envelope.clone() })),
                RequestOptions {
                    timeout: Some(left.min(DISCOVER_TIMEOUT)),
                    ..RequestOptions::default()
                },
                |_| {},
            )
            .await
            .map(Payload::into_value)
        };
        let mut probe = discover().await;
        // -32022 naming 2026-07-28 among the versions the server supports:
        // the version it refused is the one sent, so asking once more is
        // what the spec's retry with a supported version comes to.
        if matches!(&probe, Err(ClientError::Rpc(e)) if e.code == UNSUPPORTED_PROTOCOL_VERSION
            && e.data.as_ref().is_some_and(|d| offers_modern(&json!({"supportedVersions": d.get("supported")}))))
        {
            probe = discover().await;
        }
        Ok(Some(match probe {
            Ok(discovered) if offers_modern(&discovered) => {
                self.adopt(discovered, envelope, options);
                return Ok(None);
            }
            Ok(_) => "its server/discover result offers no 2026-07-28".to_owned(),
            Err(ClientError::Rpc(e)) => format!("server/discover: {}", e.message),
            Err(ClientError::Http { status, .. }) if (400..500).contains(&status) => {
                format!("server/discover: HTTP {status}")
            }
            Err(ClientError::Timeout(_)) if tokio::time::Instant::now() < deadline => {
                "no answer to server/discover".to_owned()
            }
            Err(ClientError::Timeout(_)) => {
                return Err(ClientError::Timeout(options.connect_timeout))
            }
            Err(e) => return Err(e),
        }))
    }

    /// Takes the 2026-07-28 era: from now on every request carries
    /// `envelope`. The discover result is kept in the shape of an
    /// `initialize` result, so callers read it the same way in both eras.
    fn adopt(&self, discovered: Value, envelope: Map<String, Value>, options: &ConnectOptions) {
        let capabilities = discovered
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let server_info = discovered
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO_KEY))
            .filter(|info| info.is_object())
            .cloned()
            .unwrap_or_else(|| json!({"name": options.label, "version": ""}));
        let mut described = json!({
            "protocolVersion": MODERN_PROTOCOL_VERSION,
            "capabilities": capabilities,
            "serverInfo": server_info,
        });
        if let Some(instructions) = discovered.get("instructions") {
            described["instructions"] = instructions.clone();
        }
        let _ = self.inner.envelope.set(envelope);
        let _ = self.inner.init_result.set(described);
        if let Some(filter) = listen_filter(&capabilities) {
            tokio::spawn(keep_listening(
                Connection {
                    inner: self.inner.clone(),
                    _owner: None,
                },
                filter,
            ));
        }
    }

    /// Registers `callback` for the progress of one request: returns the
    /// token to send as its `_meta.progressToken`, and a guard that forgets
    /// the callback when the request ends.
    pub(crate) fn track_progress(&self, callback: ProgressCallback) -> (String, ProgressGuard) {
        let shared = &self.inner.shared;
        let n = shared.next_progress_token.fetch_add(1, Ordering::Relaxed);
        let token = format!("mcpyard-progress-{n}");
        shared.progress().insert(token.clone(), callback);
        let guard = ProgressGuard {
            shared: shared.clone(),
            token: token.clone(),
        };
        (token, guard)
    }

    /// Whether the connection speaks the 2026-07-28 era.
    pub(crate) fn is_modern(&self) -> bool {
        self.inner.envelope.get().is_some()
    }

    /// Checks that the server still answers: `ping` in the handshake era,
    /// `server/discover` in the 2026-07-28 era (which has no `ping`).
    pub(crate) async fn check_alive(&self, options: RequestOptions) -> Result<(), ClientError> {
        let method = if self.is_modern() {
            methods::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.request_with_id(method, None, options, |_| {})
            .await
            .map(|_| ())
    }

    async fn handshake(
        &self,
        version: &str,
        options: &ConnectOptions,
        deadline: tokio::time::Instant,
    ) -> Result<(), ClientError> {
        let params = json!({
            "protocolVersion": version,
            "capabilities": options.capabilities,
            "clientInfo": {"name": options.client_name, "version": options.client_version},
        });
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let result = self
            .request_with_id(
                methods::INITIALIZE,
                Some(params),
                RequestOptions {
                    timeout: Some(left),
                    ..RequestOptions::default()
                },
                |_| {},
            )
            .await
            .map(Payload::into_value)
            .map_err(|e| match e {
                // The deadline covers the whole connect.
                ClientError::Timeout(_) => ClientError::Timeout(options.connect_timeout),
                other => other,
            })?;
        let Some(agreed) = result.get("protocolVersion").and_then(Value::as_str) else {
            return Err(ClientError::Protocol(
                "the initialize result has no protocolVersion".into(),
            ));
        };
        if agreed == MODERN_PROTOCOL_VERSION {
            return Err(ClientError::Protocol(format!(
                "{ANSWERED_MODERN}, which is negotiated with server/discover"
            )));
        }
        if !mcpyard_proto::is_supported(agreed) {
            return Err(ClientError::Protocol(format!(
                "the server wants protocol version {agreed}, which is not supported"
            )));
        }
        self.inner.transport.initialized(&result);
        let _ = self.inner.init_result.set(result);
        self.notify(methods::NOTIFICATION_INITIALIZED, None).await
    }

    /// The `initialize` result the server gave (serverInfo, capabilities,
    /// instructions, protocolVersion). In the 2026-07-28 era, the same
    /// fields taken from its `server/discover` result.
    pub(crate) fn initialize_result(&self) -> &Value {
        static NONE: Value = Value::Null;
        self.inner.init_result.get().unwrap_or(&NONE)
    }

    /// For a stdio server, the child's pid, which is also the id of the
    /// process group it and its own children run in.
    pub(crate) fn process_id(&self) -> Option<u32> {
        self.inner.transport.process_id()
    }

    /// Sends a request and waits for its result, with a hook that learns
    /// the request's upstream id right before the message goes out (so
    /// progress and server requests on its stream can be tied back to it).
    /// A timeout or cancellation sends `notifications/cancelled` for it.
    ///
    /// In the 2026-07-28 era, an answer with `resultType: "input_required"`
    /// has its input requests answered by the handler's `on_request` (with
    /// the first request's id as `related`), and the request is sent again
    /// with the responses and the server's request state, up to
    /// [`MAX_INPUT_ROUNDS`](crate::MAX_INPUT_ROUNDS) times; the timeout covers
    /// every round.
    pub(crate) async fn request_with_id(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        match self.inner.envelope.get() {
            None => self.exchange(method, params, options, on_sent).await,
            // Boxed: its rounds hold more exchanges, and a future as large
            // as all of them would be copied on every call of either era
            // (BENCHMARKS.md, section 1, "Smaller futures").
            Some(envelope) => {
                Box::pin(self.request_in_rounds(envelope, method, params, options, on_sent)).await
            }
        }
    }

    /// One round of a request, for a caller that passes an `input_required`
    /// answer on to its own 2026-07-28 client instead of answering it here:
    /// the answer comes back as the server gave it, and the caller retries
    /// with `inputResponses` and `requestState` in `params`. In the handshake
    /// era this is [`Connection::request_with_id`].
    pub(crate) async fn request_single_round(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        let params = match self.inner.envelope.get() {
            Some(envelope) => Some(with_envelope(params, &request_envelope(envelope, &options))),
            None => params,
        };
        self.exchange(method, params, options, on_sent).await
    }

    /// One request and its answer, as it goes on the wire.
    async fn exchange(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        let shared = &self.inner.shared;
        if shared.closed.is_cancelled() {
            return Err(ClientError::Closed);
        }
        // 2026-07-28 over HTTP: a tool call mirrors its declared arguments
        // into headers, and a tool with invalid declarations is not called.
        let mirrors = self.is_modern() && self.inner.transport.is_streamable_http();
        let headers = match params.as_ref() {
            Some(p) if mirrors && method == methods::TOOLS_CALL => {
                let tool = p.get("name").and_then(Value::as_str).unwrap_or_default();
                let arguments = p.get("arguments").cloned().unwrap_or(Value::Null);
                self.inner
                    .tools
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .call_headers(tool, &arguments)
                    .map_err(ClientError::Protocol)?
            }
            _ => Vec::new(),
        };
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        shared.answers.waiting().insert(id, tx);
        let _pending = PendingGuard { shared, id };
        // Ends whatever the transport keeps open for this request (its
        // response stream) once the call is over, however it ends.
        let scope = SendScope::request(&shared.closed);

        on_sent(RequestId::Number(id));
        let message = Message::request(id, method, params);
        let exchange = async {
            match self
                .inner
                .transport
                .send_with(&message, &scope, &headers)
                .await?
            {
                Some(Message::Response { result, .. }) => Ok(result),
                Some(Message::Error { error, .. }) => Err(ClientError::Rpc(error)),
                _ => rx.await.unwrap_or(Err(ClientError::Closed)),
            }
        };
        // Pinned where it was made: `select!` would otherwise move it, the
        // transport's whole future in it, into a tuple of its own.
        tokio::pin!(exchange);
        let start = tokio::time::Instant::now();
        let timeout = until(options.due());
        let cancelled = until_cancelled(options.cancel.as_ref());
        tokio::select! {
            biased;
            answer = &mut exchange => match answer {
                Ok(mut page) if mirrors && method == methods::TOOLS_LIST => {
                    self.inner
                        .tools
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .learn(page.value_mut(), &shared.label);
                    Ok(page)
                }
                other => other,
            },
            () = shared.closed.cancelled() => Err(ClientError::Closed),
            () = timeout => {
                self.cancel_upstream(id, method, "timeout");
                Err(ClientError::Timeout(options.limit(start)))
            }
            () = cancelled => {
                self.cancel_upstream(id, method, "cancelled by the client");
                Err(ClientError::Cancelled)
            }
        }
    }

    /// Tells the server to stop working on `id`, without making the caller
    /// wait for the message to go out.
    fn cancel_upstream(&self, id: i64, method: &str, reason: &str) {
        // The spec forbids cancelling initialize and server/discover; over
        // HTTP the 2026-07-28 era takes the closed connection of the
        // abandoned POST as the cancellation.
        if method == methods::INITIALIZE
            || method == methods::SERVER_DISCOVER
            || self.is_closed()
            || (self.is_modern() && self.inner.transport.is_streamable_http())
        {
            return;
        }
        let client = self.clone();
        let params = json!({"requestId": id, "reason": reason});
        tokio::spawn(async move {
            let sent = tokio::time::timeout(
                CANCEL_SEND_TIMEOUT,
                client.notify(methods::NOTIFICATION_CANCELLED, Some(params)),
            )
            .await;
            if !matches!(sent, Ok(Ok(()))) {
                tracing::debug!(
                    target: "mcpyard::upstream",
                    server = %client.inner.shared.label,
                    "could not send notifications/cancelled for request {id}"
                );
            }
        });
    }

    /// Sends a notification. Over Streamable HTTP in the 2026-07-28 era
    /// there is nothing to send it on (that wire has no client
    /// notifications), so it is dropped.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), ClientError> {
        let shared = &self.inner.shared;
        if shared.closed.is_cancelled() {
            return Err(ClientError::Closed);
        }
        if self.is_modern() && self.inner.transport.is_streamable_http() {
            tracing::debug!(target: "mcpyard::upstream", server = %shared.label, "{method} not sent: the 2026-07-28 HTTP wire has no client notifications");
            return Ok(());
        }
        let message = Message::notification(method, params);
        self.inner
            .transport
            .send(&message, &SendScope::Connection(&shared.closed))
            .await
            .map(|_| ())
    }

    /// Fetches every page of a list method and returns the items under `key`
    /// (`tools/list` → `tools`). Stops after [`MAX_LIST_PAGES`] pages, or
    /// when the server repeats a cursor, so a looping server cannot hold the
    /// caller forever.
    pub(crate) async fn list_all<T>(
        &self,
        method: &str,
        key: &str,
        options: RequestOptions,
        mut each: impl FnMut(&RawValue) -> T,
    ) -> Result<Vec<T>, ClientError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let page = self
                .request_with_id(method, params, options.clone(), |_| {})
                .await?;
            let ListPage { items: found, next } = ListPage::read(&page, method, key)?;
            items.extend(found.iter().map(|item| each(item)));
            match next {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                Some(_) => {
                    tracing::warn!(target: "mcpyard::upstream", server = %self.inner.shared.label, "{method}: the server repeated a cursor; stopping");
                    return Ok(items);
                }
                None => return Ok(items),
            }
        }
        tracing::warn!(target: "mcpyard::upstream", server = %self.inner.shared.label, "{method}: stopped after {MAX_LIST_PAGES} pages");
        Ok(items)
    }

    /// Whether the connection is gone (child exited, stream ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.shared.closed.is_cancelled()
    }

    /// Resolves when the connection is gone.
    pub(crate) async fn closed(&self) {
        self.inner.shared.closed.cancelled().await;
    }

    /// Closes the connection: DELETE of the HTTP session, or for a child
    /// process stdin closed, a grace period, then its whole process group
    /// killed and reaped. Pending requests fail with [`ClientError::Closed`].
    pub(crate) async fn shutdown(&self) {
        self.inner.transport.shutdown().await;
        self.inner.shared.close();
    }
}

/// Keeps a `subscriptions/listen` stream open while the client is: its
/// notifications reach the handler through the dispatcher. A stream that
/// ends is opened again after a pause that grows while it keeps ending; a
/// server that does not know the method is not asked again.
async fn keep_listening(client: Connection, filter: Value) {
    let shared = client.inner.shared.clone();
    let mut wait = LISTEN_RETRY;
    loop {
        let opened = tokio::time::Instant::now();
        let outcome = client
            .request_with_id(
                methods::SUBSCRIPTIONS_LISTEN,
                Some(json!({ "notifications": filter })),
                RequestOptions::default(),
                |id| {
                    if let RequestId::Number(n) = id {
                        shared.listen_id.store(n, Ordering::Relaxed);
                    }
                },
            )
            .await;
        shared.listen_id.store(0, Ordering::Relaxed);
        match outcome {
            _ if client.is_closed() => return,
            Err(ClientError::Closed) => return,
            Err(ClientError::Rpc(e)) if e.code == mcpyard_proto::codes::METHOD_NOT_FOUND => {
                tracing::debug!(target: "mcpyard::upstream", server = %shared.label, "the server does not offer subscriptions/listen");
                return;
            }
            Ok(_) => {
                tracing::debug!(target: "mcpyard::upstream", server = %shared.label, "the server ended the listen stream")
            }
            Err(e) => {
                tracing::debug!(target: "mcpyard::upstream", server = %shared.label, "the listen stream failed: {e}")
            }
        }
        if opened.elapsed() > LISTEN_RETRY_CAP {
            wait = LISTEN_RETRY;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = shared.closed.cancelled() => return,
        }
        wait = (wait * 2).min(LISTEN_RETRY_CAP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_joins_the_callers_meta_and_replaces_a_forwarded_one() {
        let mut envelope = Map::new();
        envelope.insert(PROTOCOL_VERSION_KEY.into(), json!(MODERN_PROTOCOL_VERSION));
        envelope.insert(CLIENT_CAPABILITIES_KEY.into(), json!({"sampling": {}}));
        let stamped = with_envelope(
            Some(json!({"name": "echo", "_meta": {
                "progressToken": 7,
                CLIENT_CAPABILITIES_KEY: {"roots": {}},
            }})),
            &envelope,
        );
        assert_eq!(
            stamped,
            json!({"name": "echo", "_meta": {
                "progressToken": 7,
                PROTOCOL_VERSION_KEY: MODERN_PROTOCOL_VERSION,
                CLIENT_CAPABILITIES_KEY: {"sampling": {}},
            }})
        );
        assert_eq!(
            with_envelope(None, &envelope),
            json!({"_meta": Value::Object(envelope.clone())})
        );
        assert_eq!(with_envelope(Some(json!([1])), &envelope), json!([1]));
    }

    #[test]
    fn only_lists_that_may_change_are_listened_to() {
        assert_eq!(
            listen_filter(&json!({"tools": {"listChanged": true}, "prompts": {}})),
            Some(json!({"toolsListChanged": true}))
        );
        assert_eq!(listen_filter(&json!({"tools": {}})), None);
    }

    #[test]
    fn only_a_discover_result_naming_the_era_adopts_it() {
        assert!(offers_modern(
            &json!({"supportedVersions": ["2025-11-25", "2026-07-28"]})
        ));
        assert!(!offers_modern(
            &json!({"supportedVersions": ["2025-11-25"]})
        ));
        assert!(!offers_modern(&json!({})));
    }
}
