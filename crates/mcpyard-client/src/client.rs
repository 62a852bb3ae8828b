//! The public client: the MCP methods a caller uses. Its settings are in
//! `options.rs`, where it is in its life in `state.rs`, and the wire work
//! (one connection, its dispatcher, request correlation) in `connection.rs`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpyard_proto::{methods, Payload, RequestId};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::connection::Connection;
use crate::handler::{ElicitationHandler, Handlers, RootsHandler};
use crate::options::{ConnectOptions, RequestOptions};
use crate::sampling::{Sampler, SamplingPolicy};
use crate::state::ClientState;
use crate::{ClientError, ClientHandler, NoopHandler, TransportSpec};

/// An MCP client. Cheap to clone; all clones share one connection and one
/// [`ClientState`]. Dropping the last clone without
/// [`McpClient::shutdown`] closes the connection at once (a child process
/// group is killed).
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    spec: TransportSpec,
    handler: Arc<dyn ClientHandler>,
    options: ConnectOptions,
    /// `Ready` stays stored once reached; [`McpClient::state`] reads
    /// `Closed` from the connection itself.
    phase: watch::Sender<ClientState>,
    connection: OnceLock<Connection>,
    /// Cancelled by [`McpClient::shutdown`]: stops an `open` under way.
    stop: CancellationToken,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("label", &self.inner.options.label)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// Builds an [`McpClient`]: where the server is, the handlers for what the
/// server asks of the client, and the settings. The client advertises the
/// `roots`, `elicitation` and `sampling` capabilities exactly when a handler
/// for them is set here (besides whatever [`ConnectOptions::capabilities`]
/// declares for a custom [`ClientHandler`] that answers them itself).
///
/// ```no_run
/// # async fn demo() -> Result<(), mcpyard_client::ClientError> {
/// use std::time::Duration;
/// use mcpyard_client::{McpClient, Root, TransportSpec};
///
/// let spec = TransportSpec::StreamableHttp { url: "http://127.0.0.1:3001/mcp".into(), headers: vec![] };
/// let client = McpClient::builder(spec)
///     .request_timeout(Duration::from_secs(60))
///     .roots(vec![Root::new("file:///srv/project")])
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until `build` or `connect`"]
pub struct ClientBuilder {
    spec: TransportSpec,
    options: ConnectOptions,
    handlers: Handlers,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("spec", &self.spec.describe())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Replaces every setting of the connection (keep the others with
    /// `..ConnectOptions::default()`).
    pub fn options(mut self, options: ConnectOptions) -> Self {
        self.options = options;
        self
    }

    /// The default timeout of requests that set none
    /// ([`ConnectOptions::request_timeout`]).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.options.request_timeout = Some(timeout);
        self
    }

    /// Receives notifications and the server requests no handler below
    /// takes (by default [`NoopHandler`]: pings answered, the rest refused).
    pub fn handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.handlers.base = handler;
        self
    }

    /// Answers `roots/list`; advertises `roots` (with `listChanged`: see
    /// [`McpClient::notify_roots_changed`]).
    pub fn roots(mut self, roots: impl RootsHandler) -> Self {
        self.handlers.roots = Some(Arc::new(roots));
        self
    }

    /// Answers `elicitation/create`; advertises `elicitation` as
    /// [`ElicitationHandler::capability`] says.
    pub fn elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers `sampling/createMessage` with `sampler`, each request first
    /// admitted by `policy` (allowed models, token cap, reviewer); advertises
    /// `sampling` as [`Sampler::capability`] says.
    pub fn sampling(mut self, policy: SamplingPolicy, sampler: impl Sampler) -> Self {
        self.handlers.sampling = Some((policy, Arc::new(sampler)));
        self
    }

    /// The client, [`ClientState::Disconnected`]: nothing is opened until
    /// [`McpClient::open`].
    pub fn build(self) -> McpClient {
        let mut options = self.options;
        options.capabilities = self.handlers.advertise(options.capabilities);
        let handler = self.handlers.into_handler();
        McpClient {
            inner: Arc::new(ClientInner {
                spec: self.spec,
                handler,
                options,
                phase: watch::Sender::new(ClientState::Disconnected),
                connection: OnceLock::new(),
                stop: CancellationToken::new(),
            }),
        }
    }

    /// [`ClientBuilder::build`], then [`McpClient::open`].
    pub async fn connect(self) -> Result<McpClient, ClientError> {
        let client = self.build();
        client.open().await?;
        Ok(client)
    }
}

impl McpClient {
    /// Starts building a client for the server at `spec`.
    pub fn builder(spec: TransportSpec) -> ClientBuilder {
        ClientBuilder {
            spec,
            options: ConnectOptions::default(),
            handlers: Handlers::new(Arc::new(NoopHandler)),
        }
    }

    /// Builds a client whose `handler` answers everything the server sends
    /// and connects it ([`McpClient::open`]). `options.capabilities` is
    /// advertised as it is: declare there what the handler answers.
    pub async fn connect(
        spec: TransportSpec,
        handler: Arc<dyn ClientHandler>,
        options: ConnectOptions,
    ) -> Result<Self, ClientError> {
        Self::builder(spec)
            .options(options)
            .handler(handler)
            .connect()
            .await
    }

    /// Opens the transport and runs `initialize` +
    /// `notifications/initialized` (with [`EraPolicy::Auto`],
    /// `server/discover` first: a server that offers 2026-07-28 is spoken to
    /// in that era, any other answer falls back to `initialize`):
    /// [`ClientState::Disconnected`] → [`ClientState::Initializing`] →
    /// [`ClientState::Ready`].
    ///
    /// The whole of it is bounded by [`ConnectOptions::connect_timeout`]; on
    /// any failure the transport is shut down (a child process is killed
    /// and reaped), the client is `Disconnected` again and the error is
    /// returned. Opening a `Ready` client does nothing; one that is
    /// `Initializing` or `Closed` fails with [`ClientError::NotReady`].
    ///
    /// # Reconnection
    ///
    /// Over Streamable HTTP the connection heals itself, with no action of
    /// the caller:
    /// - a server that forgot the session (it restarted or expired it: 404,
    ///   or the 400 of servers built on the TypeScript SDK) gets a new
    ///   `initialize` with the same parameters, once per lost session, and
    ///   the request is sent again; [`ClientHandler::on_session_restarted`]
    ///   then says that what was learned in the old session may be stale;
    /// - a response stream that breaks before its answer is resumed with
    ///   `GET` + `Last-Event-ID` when the server numbered its events, after
    ///   the server's `retry` delay (else 1 s), up to 10 times; without
    ///   event ids the request fails with [`ClientError::Transport`];
    /// - the `GET` stream for what the server sends unasked is reopened
    ///   whenever it ends, after 1 s, doubling on each failure up to 30 s
    ///   (a 405 means the server offers none: not retried);
    /// - in the 2026-07-28 era the `subscriptions/listen` stream is reopened
    ///   the same way.
    ///
    /// A stdio child that exits, or a legacy SSE stream that ends, closes
    /// the client for good ([`ClientState::Closed`]): build a new one.
    pub async fn open(&self) -> Result<(), ClientError> {
        let inner = &self.inner;
        let mut refused = None;
        inner.phase.send_if_modified(|phase| match *phase {
            ClientState::Disconnected => {
                *phase = ClientState::Initializing;
                true
            }
            other => {
                refused = Some(other);
                false
            }
        });
        match refused.map(|_| self.state()) {
            None => {}
            Some(ClientState::Ready) => return Ok(()),
            Some(state) => return Err(ClientError::NotReady { state }),
        }
        let connect = Connection::connect(
            inner.spec.clone(),
            inner.handler.clone(),
            inner.options.clone(),
        );
        let connected = tokio::select! {
            connected = connect => connected,
            () = inner.stop.cancelled() => Err(ClientError::NotReady { state: ClientState::Closed }),
        };
        match connected {
            Ok(connection) if !inner.stop.is_cancelled() => {
                let _ = inner.connection.set(connection);
                inner.phase.send_replace(ClientState::Ready);
                Ok(())
            }
            Ok(connection) => {
                connection.shutdown().await;
                Err(ClientError::NotReady {
                    state: ClientState::Closed,
                })
            }
            Err(e) => {
                inner.phase.send_if_modified(|phase| {
                    let back = *phase == ClientState::Initializing;
                    if back {
                        *phase = ClientState::Disconnected;
                    }
                    back
                });
                Err(e)
            }
        }
    }

    /// Where the client is in its life.
    pub fn state(&self) -> ClientState {
        let phase = *self.inner.phase.borrow();
        match (phase, self.inner.connection.get()) {
            (ClientState::Ready, Some(c)) if c.is_closed() => ClientState::Closed,
            _ => phase,
        }
    }

    /// The connection, when the client is ready.
    fn ready(&self) -> Result<&Connection, ClientError> {
        match self.inner.connection.get() {
            Some(c) if self.state() == ClientState::Ready => Ok(c),
            _ => Err(ClientError::NotReady {
                state: self.state(),
            }),
        }
    }

    /// The `initialize` result the server gave (serverInfo, capabilities,
    /// instructions, protocolVersion); `Null` before the client is ready.
    /// In the 2026-07-28 era, the same fields taken from its
    /// `server/discover` result.
    pub fn initialize_result(&self) -> &Value {
        static NONE: Value = Value::Null;
        self.inner
            .connection
            .get()
            .map_or(&NONE, Connection::initialize_result)
    }

    /// The protocol version the server agreed to (`2026-07-28` when the
    /// connection speaks that era); empty before the client is ready.
    pub fn protocol_version(&self) -> &str {
        self.initialize_result()
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether the connection speaks the 2026-07-28 era.
    pub fn is_modern(&self) -> bool {
        self.inner
            .connection
            .get()
            .is_some_and(Connection::is_modern)
    }

    /// For a stdio server, the child's pid, which is also the id of the
    /// process group it and its own children run in.
    pub fn process_id(&self) -> Option<u32> {
        self.inner.connection.get().and_then(Connection::process_id)
    }

    /// The label given in [`ConnectOptions::label`].
    pub fn label(&self) -> &str {
        &self.inner.options.label
    }

    /// `options` with the client's default timeout when it sets none.
    fn with_default_timeout(&self, mut options: RequestOptions) -> RequestOptions {
        options.timeout = options.timeout.or(self.inner.options.request_timeout);
        options
    }

    /// Sends a request and waits for its result. Requests are correlated
    /// by id, so any number may be in flight at once.
    ///
    /// - Timeout: [`RequestOptions::timeout`], else the client's
    ///   [`ConnectOptions::request_timeout`]; past it the call fails with
    ///   [`ClientError::Timeout`].
    /// - Cancellation: cancelling [`RequestOptions::cancel`] ends the call
    ///   with [`ClientError::Cancelled`].
    /// - Either way the server gets `notifications/cancelled` for the
    ///   request, so it can stop the work (except for `initialize`, which the
    ///   spec forbids cancelling, and in the 2026-07-28 era over HTTP, where
    ///   dropping the request's POST is the cancellation).
    /// - Progress: with [`RequestOptions::progress`] the request carries a
    ///   `progressToken` and its progress reaches the callback.
    ///
    /// In the 2026-07-28 era the request carries the envelope, and an
    /// `input_required` answer is resolved (see [`McpClient::request_with_id`]).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        self.request_with_id(method, params, options, |_| {})
            .await
            .map(Payload::into_value)
    }

    /// Like [`McpClient::request`], with a hook that learns the request's
    /// id right before the message goes out (so progress and server requests
    /// on its stream can be tied back to it).
    ///
    /// In the 2026-07-28 era, an answer with `resultType: "input_required"`
    /// has its input requests answered by the handlers (with the first
    /// request's id as `related`), and the request is sent again with the
    /// responses and the server's request state, up to [`MAX_INPUT_ROUNDS`]
    /// times; the timeout covers every round.
    ///
    /// The result is the JSON text the server sent (a [`Payload`], which a
    /// gateway can pass on without parsing); `into_value()` parses it.
    pub async fn request_with_id(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        let connection = self.ready()?;
        let mut options = self.with_default_timeout(options);
        let mut params = params;
        let _progress = match options.progress.take() {
            Some(callback) => {
                let (token, guard) = connection.track_progress(callback);
                params = Some(with_progress_token(params, token)?);
                Some(guard)
            }
            None => None,
        };
        connection
            .request_with_id(method, params, options, on_sent)
            .await
    }

    /// One round of a request, for a caller that passes an `input_required`
    /// answer on to its own 2026-07-28 client instead of answering it here:
    /// the answer comes back as the server gave it, and the caller retries
    /// with `inputResponses` and `requestState` in `params`. In the handshake
    /// era this is [`McpClient::request_with_id`] without progress callback.
    pub async fn request_single_round(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
        on_sent: impl FnOnce(RequestId) + Send,
    ) -> Result<Payload, ClientError> {
        let connection = self.ready()?;
        let options = self.with_default_timeout(options);
        connection
            .request_single_round(method, params, options, on_sent)
            .await
    }

    /// Sends a notification. Over Streamable HTTP in the 2026-07-28 era
    /// there is nothing to send it on (that wire has no client
    /// notifications), so it is dropped.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.ready()?.notify(method, params).await
    }

    /// Fetches every page of a list method and returns the items under `key`
    /// (`tools/list` → `tools`). Stops after [`MAX_LIST_PAGES`] pages, or
    /// when the server repeats a cursor, so a looping server cannot hold the
    /// caller forever. Each page is bounded by the default timeout.
    pub async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        self.list_all_as(method, key, |item| {
            // Read as JSON already, so it parses.
            serde_json::from_str(item.get()).unwrap_or_default()
        })
        .await
    }

    /// [`McpClient::list_all`], each item made into a `T` from its JSON
    /// text as its page arrives: a long list is never held whole as JSON
    /// values, nor parsed into them unless `each` does.
    pub async fn list_all_as<T>(
        &self,
        method: &str,
        key: &str,
        each: impl FnMut(&RawValue) -> T,
    ) -> Result<Vec<T>, ClientError> {
        let options = self.with_default_timeout(RequestOptions::default());
        self.ready()?.list_all(method, key, options, each).await
    }

    /// Checks that the server still answers: `ping` in the handshake era,
    /// `server/discover` in the 2026-07-28 era (which has no `ping`).
    pub async fn check_alive(&self, options: RequestOptions) -> Result<(), ClientError> {
        let options = self.with_default_timeout(options);
        self.ready()?.check_alive(options).await
    }

    /// `ping`: whether the server answers (handshake era only).
    pub async fn ping(&self) -> Result<(), ClientError> {
        self.request(methods::PING, None, RequestOptions::default())
            .await
            .map(|_| ())
    }

    /// Every tool the server offers (`tools/list`, all pages).
    pub async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all(methods::TOOLS_LIST, "tools").await
    }

    /// Calls a tool (`tools/call`) and returns its `CallToolResult`; a tool
    /// that failed is a result with `isError: true`, not an error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = json!({"name": name, "arguments": arguments});
        self.request(methods::TOOLS_CALL, Some(params), options)
            .await
    }

    /// Starts a tool as a task (`tools/call` with `task`, protocol
    /// 2025-11-25): returns the `CreateTaskResult` (its `task.taskId` is what
    /// [`McpClient::get_task`] and [`McpClient::task_result`] take). `ttl`:
    /// how long the server should keep the task's result.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let mut task = Map::new();
        if let Some(ttl) = ttl {
            task.insert("ttl".into(), json!(ttl.as_millis() as u64));
        }
        let params = json!({"name": name, "arguments": arguments, "task": task});
        self.request(methods::TOOLS_CALL, Some(params), options)
            .await
    }

    /// A task's status (`tasks/get`).
    pub async fn get_task(&self, task_id: &str) -> Result<Value, ClientError> {
        let params = json!({ "taskId": task_id });
        self.request(methods::TASKS_GET, Some(params), RequestOptions::default())
            .await
    }

    /// Waits for a task's result (`tasks/result`): the result of the
    /// request the task ran (a `CallToolResult` for a tool).
    pub async fn task_result(
        &self,
        task_id: &str,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = json!({ "taskId": task_id });
        self.request(methods::TASKS_RESULT, Some(params), options)
            .await
    }

    /// Every task the server keeps for this client (`tasks/list`, all pages).
    pub async fn list_tasks(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all(methods::TASKS_LIST, "tasks").await
    }

    /// Cancels a task (`tasks/cancel`); returns its final status.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Value, ClientError> {
        let params = json!({ "taskId": task_id });
        self.request(
            methods::TASKS_CANCEL,
            Some(params),
            RequestOptions::default(),
        )
        .await
    }

    /// Every resource the server lists (`resources/list`, all pages).
    pub async fn list_resources(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all(methods::RESOURCES_LIST, "resources").await
    }

    /// Every resource template (`resources/templates/list`, all pages).
    pub async fn list_resource_templates(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all(methods::RESOURCES_TEMPLATES_LIST, "resourceTemplates")
            .await
    }

    /// Reads a resource (`resources/read`); returns its `contents`.
    pub async fn read_resource(
        &self,
        uri: &str,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = json!({ "uri": uri });
        self.request(methods::RESOURCES_READ, Some(params), options)
            .await
    }

    /// Asks for `notifications/resources/updated` when the resource changes
    /// (`resources/subscribe`); they reach the [`ClientHandler`].
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        let params = json!({ "uri": uri });
        self.request(
            methods::RESOURCES_SUBSCRIBE,
            Some(params),
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// Stops the updates of [`McpClient::subscribe`] (`resources/unsubscribe`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        let params = json!({ "uri": uri });
        self.request(
            methods::RESOURCES_UNSUBSCRIBE,
            Some(params),
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// Every prompt the server offers (`prompts/list`, all pages).
    pub async fn list_prompts(&self) -> Result<Vec<Value>, ClientError> {
        self.list_all(methods::PROMPTS_LIST, "prompts").await
    }

    /// Fills a prompt in (`prompts/get`): `arguments` maps argument names
    /// to strings.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions,
    ) -> Result<Value, ClientError> {
        let params = json!({"name": name, "arguments": arguments});
        self.request(methods::PROMPTS_GET, Some(params), options)
            .await
    }

    /// Completion values for an argument (`completion/complete`).
    /// `reference` names the prompt (`{"type": "ref/prompt", "name": ...}`)
    /// or resource template (`{"type": "ref/resource", "uri": ...}`);
    /// returns the result's `completion` (`values`, `total`, `hasMore`).
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Value, ClientError> {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        let mut result = self
            .request(
                methods::COMPLETION_COMPLETE,
                Some(params),
                RequestOptions::default(),
            )
            .await?;
        Ok(result
            .get_mut("completion")
            .map(Value::take)
            .unwrap_or(Value::Null))
    }

    /// Asks the server for log messages of `level` and above
    /// (`logging/setLevel`); they reach the [`ClientHandler`].
    pub async fn set_logging_level(&self, level: &str) -> Result<(), ClientError> {
        let params = json!({ "level": level });
        self.request(
            methods::LOGGING_SET_LEVEL,
            Some(params),
            RequestOptions::default(),
        )
        .await
        .map(|_| ())
    }

    /// Tells the server the roots changed
    /// (`notifications/roots/list_changed`): it will ask again.
    pub async fn notify_roots_changed(&self) -> Result<(), ClientError> {
        self.notify(methods::NOTIFICATION_ROOTS_LIST_CHANGED, None)
            .await
    }

    /// Whether the client is [`ClientState::Closed`].
    pub fn is_closed(&self) -> bool {
        self.state() == ClientState::Closed
    }

    /// Resolves when the client is [`ClientState::Closed`].
    pub async fn closed(&self) {
        let mut phase = self.inner.phase.subscribe();
        loop {
            if let Some(connection) = self.inner.connection.get() {
                connection.closed().await;
                return;
            }
            if *phase.borrow_and_update() == ClientState::Closed {
                return;
            }
            tokio::select! {
                changed = phase.changed() => if changed.is_err() { return },
                () = self.inner.stop.cancelled() => {}
            }
        }
    }

    /// Closes the connection for good ([`ClientState::Closed`]): DELETE of
    /// the HTTP session, or for a child process stdin closed, a grace
    /// period, then its whole process group killed and reaped. Pending
    /// requests fail with [`ClientError::Closed`]; an [`McpClient::open`]
    /// under way stops.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        inner.stop.cancel();
        if let Some(connection) = inner.connection.get() {
            connection.shutdown().await;
        }
        inner.phase.send_replace(ClientState::Closed);
    }
}

/// `params` with `token` as its `_meta.progressToken` (replacing one the
/// caller put there: the callback is for this request's progress).
fn with_progress_token(params: Option<Value>, token: String) -> Result<Value, ClientError> {
    let mut params = match params {
        Some(Value::Object(p)) => p,
        None | Some(Value::Null) => Map::new(),
        Some(_) => {
            return Err(ClientError::Protocol(
                "a request with a progress callback needs object params".into(),
            ))
        }
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta["progressToken"] = Value::String(token);
    Ok(Value::Object(params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_token_joins_the_params_meta() {
        let params = with_progress_token(
            Some(json!({"name": "x", "_meta": {"progressToken": 1, "k": 2}})),
            "t".into(),
        )
        .unwrap();
        assert_eq!(
            params,
            json!({"name": "x", "_meta": {"progressToken": "t", "k": 2}})
        );
        assert_eq!(
            with_progress_token(None, "t".into()).unwrap(),
            json!({"_meta": {"progressToken": "t"}})
        );
        assert!(with_progress_token(Some(json!([1])), "t".into()).is_err());
    }

    #[tokio::test]
    async fn requests_before_open_and_after_shutdown_name_the_state() {
        let spec = TransportSpec::StreamableHttp {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: vec![],
        };
        let client = McpClient::builder(spec).build();
        assert_eq!(client.state(), ClientState::Disconnected);
        let err = client.list_tools().await.unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::NotReady {
                    state: ClientState::Disconnected
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "the client is not ready: it is disconnected"
        );
        client.shutdown().await;
        assert_eq!(client.state(), ClientState::Closed);
        let err = client.ping().await.unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::NotReady {
                    state: ClientState::Closed
                }
            ),
            "{err:?}"
        );
        let reopen = client.open().await.unwrap_err();
        assert!(matches!(
            reopen,
            ClientError::NotReady {
                state: ClientState::Closed
            }
        ));
        client.closed().await;
    }
}
