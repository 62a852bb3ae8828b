//! One upstream MCP server as a source, supervised: connected in the
//! background, its lists fetched into the catalog, reconnected with backoff
//! when it dies (a stdio child is restarted), left out of the catalog while
//! it is down.

mod lists;
mod live_sampler;
pub(crate) mod pass_through;
mod relay;
mod spec;

pub use spec::{UpstreamSampling, UpstreamSpec};

use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcpyard_client::{
    ClientError, ConnectOptions, EraPolicy, McpClient, RequestOptions, MODERN_PROTOCOL_VERSION,
};
use mcpyard_proto::{Payload, RequestId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::call::{Era, ListKind, SourceLists};
use crate::downstream::Sessions;
use crate::source::{CallContext, Source, SourceEvents, SourceHealth, SourceRequest};
use crate::RouteError;
use lists::{fetch_lists, ping};
pub(crate) use live_sampler::LiveSampler;
use relay::{Changes, LocalSampling, Relay};

/// Where an upstream stands, for the status tool and for failing fast.
#[derive(Debug, Clone)]
pub(crate) enum State {
    Connecting,
    Up,
    Down {
        error: String,
    },
    /// Its OAuth credential is gone (a refresh token revoked or expired,
    /// or no login yet): a person must run `mcpyard login NAME`. Retried
    /// like `Down`, so a login is picked up without a restart.
    LoginRequired {
        error: String,
    },
    /// A connection for 2026-07-28 clients found that the server does not
    /// speak that era: its clients are served through the handshake one.
    NotOffered,
    Stopped,
}

/// The message of an authorization failure a person must fix by logging
/// in, or `None` for any other failure.
fn login_required(error: &ClientError) -> Option<String> {
    match error {
        ClientError::Auth(e) if e.is_login_required() => Some(e.to_string()),
        _ => None,
    }
}

/// The state a failed connection or call leaves the upstream in.
fn failed_state(error: &ClientError) -> State {
    match login_required(error) {
        Some(error) => State::LoginRequired { error },
        None => State::Down {
            error: error.to_string(),
        },
    }
}

#[derive(Debug)]
struct Health {
    state: State,
    since: Instant,
    restarts: u32,
}

#[derive(Debug)]
pub(crate) struct Upstream {
    /// The upstream's index in the catalog.
    index: usize,
    pub(crate) spec: UpstreamSpec,
    client: RwLock<Option<McpClient>>,
    health: Mutex<Health>,
    relay: Arc<Relay>,
    /// Woken when a call finds the credential gone, so the supervisor
    /// drops the connection and retries as `LoginRequired`.
    credential_lost: tokio::sync::Notify,
    /// What the upstream said changed, coalesced until the supervisor
    /// fetches it again.
    changes: Arc<Changes>,
    sessions: Arc<Sessions>,
    /// Declared in `initialize`: [`upstream_capabilities`] and the
    /// extensions the gateway relays.
    capabilities: Value,
    stop: CancellationToken,
    /// Cancelled when the supervisor has stopped and the client is shut down.
    done: CancellationToken,
    me: Weak<Upstream>,
    /// The era this connection is for: `Modern` for the second connection
    /// to a server, opened when the first 2026-07-28 client comes.
    era: Era,
    /// The handshake connection's 2026-07-28 twin, when there is one.
    twin: OnceLock<Arc<Upstream>>,
    /// Set when the supervisor is started: a 2026-07-28 connection no
    /// client of that era asked for never is, and has nothing to stop.
    started: std::sync::atomic::AtomicBool,
    /// Kept for the second connection, made like this one.
    relaying: Relaying,
}

/// The capabilities mcpyard declares to every upstream: all it can relay.
/// Whether a given call's client can answer is checked per request.
fn upstream_capabilities() -> Value {
    json!({
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": true},
    })
}

/// How often a connected upstream is pinged: an HTTP upstream that went
/// away is otherwise only noticed by the next call.
const HEALTH_CHECK_EVERY: Duration = Duration::from_secs(15);

const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// What every upstream's relay to the clients shares.
#[derive(Debug, Clone)]
pub(crate) struct Relaying {
    /// How long a client has to answer a relayed request.
    pub(crate) client_timeout: Duration,
    /// Answers sampling requests of upstreams that allow it; a reload may
    /// put another local-model source in its place.
    pub(crate) sampler: Option<Arc<LiveSampler>>,
    pub(crate) audit: Option<crate::AuditTrail>,
    /// The guardrails' redaction of what is relayed.
    /// The guardrails' redaction of what is relayed, replaced by a reload
    /// for every upstream at once.
    pub(crate) redactor: crate::Live<Option<Arc<crate::governance::guard::Redactor>>>,
    /// MCP Apps: whether the UI extension is declared to upstreams.
    pub(crate) apps: crate::catalog::AppsConfig,
}

/// An upstream MCP server at catalogue `index`, in the handshake era (its
/// second connection, for 2026-07-28 clients, is [`Source::second_era`]).
pub(crate) fn upstream(
    index: usize,
    spec: UpstreamSpec,
    sessions: &Arc<Sessions>,
    relaying: &Relaying,
    stop: &CancellationToken,
) -> Arc<dyn Source> {
    Upstream::new(
        index,
        spec,
        Era::Handshake,
        sessions.clone(),
        relaying.clone(),
        stop.child_token(),
    )
}

impl Upstream {
    /// Creates the upstream; [`Source::start`] starts its supervisor.
    fn new(
        index: usize,
        spec: UpstreamSpec,
        era: Era,
        sessions: Arc<Sessions>,
        relaying: Relaying,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let changes = Arc::new(Changes::default());
        let local_sampling = match (&spec.sampling, relaying.sampler.clone()) {
            (Some(sampling), Some(sampler)) => Some(LocalSampling {
                sampler: sampler as Arc<dyn crate::Sampler>,
                always: sampling.always,
                policy: sampling.policy.clone(),
                audit: relaying.audit.clone(),
            }),
            _ => None,
        };
        let relay = Arc::new(Relay::new(
            spec.name.clone(),
            index,
            local_sampling,
            sessions.clone(),
            changes.clone(),
            relaying.client_timeout,
            relaying.redactor.clone(),
        ));
        Arc::new_cyclic(|me| Self {
            index,
            spec,
            client: RwLock::new(None),
            health: Mutex::new(Health {
                state: State::Connecting,
                since: Instant::now(),
                restarts: 0,
            }),
            relay,
            credential_lost: tokio::sync::Notify::new(),
            changes,
            sessions,
            capabilities: crate::catalog::apps::with_extensions(
                upstream_capabilities(),
                &relaying.apps,
            ),
            stop,
            done: CancellationToken::new(),
            me: me.clone(),
            era,
            twin: OnceLock::new(),
            started: Default::default(),
            relaying,
        })
    }

    /// Whether this is the second, 2026-07-28 connection to a server.
    fn is_modern_twin(&self) -> bool {
        self.era == Era::Modern
    }

    /// Whether this connection already speaks 2026-07-28 (a server of that
    /// era alone): then no second connection is needed.
    fn speaks_modern(&self) -> bool {
        self.client()
            .is_some_and(|c| c.protocol_version() == MODERN_PROTOCOL_VERSION)
    }

    fn set_state(&self, state: State) {
        let mut h = self.health.lock().expect("health lock poisoned");
        h.state = state;
        h.since = Instant::now();
    }

    /// Up, keeping `since` when a renewed session finds it up already.
    fn set_up(&self) {
        let mut h = self.health.lock().expect("health lock poisoned");
        if !matches!(h.state, State::Up) {
            h.state = State::Up;
            h.since = Instant::now();
        }
    }

    pub(crate) fn client(&self) -> Option<McpClient> {
        self.client
            .read()
            .expect("client lock poisoned")
            .clone()
            .filter(|c| !c.is_closed())
    }

    /// A JSON summary for the status tool (never header or env values).
    pub(crate) fn status(&self) -> Value {
        let h = self.health.lock().expect("health lock poisoned");
        let (state, error) = match &h.state {
            State::Connecting => ("connecting", None),
            State::Up => ("up", None),
            State::Down { error } => ("down", Some(error.clone())),
            State::LoginRequired { error } => ("login_required", Some(error.clone())),
            State::NotOffered => ("not_offered", None),
            State::Stopped => ("stopped", None),
        };
        let client = self.client();
        let server_info = client
            .as_ref()
            .and_then(|c| c.initialize_result().get("serverInfo").cloned());
        let protocol_version = client.map(|c| c.protocol_version().to_owned());
        let modern = self.twin.get().map(|twin| {
            let s = twin.status();
            json!({"state": s["state"], "error": s["error"], "restarts": s["restarts"]})
        });
        json!({
            "name": self.spec.name,
            "kind": "mcp",
            "transport": self.spec.transport.describe(),
            "healthy": matches!(h.state, State::Up),
            "ready": matches!(h.state, State::Up),
            "state": state,
            "error": error,
            "since_seconds": h.since.elapsed().as_secs(),
            "restarts": h.restarts,
            "serverInfo": server_info,
            "protocolVersion": protocol_version,
            // The second connection, for 2026-07-28 clients, once one came.
            "modernConnection": modern,
        })
    }

    async fn supervise(self: Arc<Self>, events: SourceEvents) {
        let mut backoff = BACKOFF_START;
        loop {
            let (client, mut lists) = match self.connect(&events).await {
                Ok(connected) => connected,
                Err(None) => break,
                Err(Some(state)) => {
                    if !self.down(&events, state, &mut backoff).await {
                        break;
                    }
                    continue;
                }
            };
            let up_since = Instant::now();
            let mut health_check = tokio::time::interval(HEALTH_CHECK_EVERY);
            health_check.reset();
            // Why the connection ended, when it was not simply lost.
            let mut ended: Option<State> = None;
            loop {
                tokio::select! {
                    _ = client.closed() => break,
                    _ = self.credential_lost.notified() => {
                        ended = Some(self.current_state());
                        break;
                    }
                    _ = health_check.tick() => {
                        // Yields to a stop: a server that no longer answers
                        // would otherwise hold it for the ping's timeout.
                        let alive = tokio::select! {
                            alive = ping(&client) => alive,
                            _ = self.stop.cancelled() => break,
                        };
                        if let Err(e) = alive {
                            tracing::warn!(server = %self.spec.name, error = %e, "upstream failed its health check");
                            ended = login_required(&e).map(|error| State::LoginRequired { error });
                            break;
                        }
                    }
                    _ = self.stop.cancelled() => break,
                    (kinds, renewed) = self.changes.next() => {
                        let fetched = if renewed {
                            self.start_session(&client, &events, lists.clone()).await
                        } else {
                            self.fetch_lists(&client, &kinds, lists.clone()).await
                        };
                        match fetched {
                            Some(fetched) => lists = fetched,
                            None => tracing::warn!(server = %self.spec.name, "did not list its changes within {:?}; keeping the last lists", self.spec.list_timeout),
                        }
                        events.publish(lists.clone());
                    }
                }
            }
            *self.client.write().expect("client lock poisoned") = None;
            client.shutdown().await;
            if self.stop.is_cancelled() {
                break;
            }
            // A connection that stayed up a while starts the backoff afresh.
            if up_since.elapsed() > Duration::from_secs(60) {
                backoff = BACKOFF_START;
            }
            self.health.lock().expect("health lock poisoned").restarts += 1;
            let state = match ended {
                Some(state @ State::LoginRequired { .. }) => state,
                _ => State::Down {
                    error: "connection lost".into(),
                },
            };
            if !self.down(&events, state, &mut backoff).await {
                break;
            }
        }
        events.down();
        if !matches!(self.current_state(), State::NotOffered) {
            self.set_state(State::Stopped);
        }
        let client = self.client.write().expect("client lock poisoned").take();
        if let Some(c) = client {
            c.shutdown().await;
        }
        self.done.cancel();
    }

    /// Connects and fetches the lists, publishing them. `Err(None)` when
    /// the gateway stops meanwhile, `Err(Some(state))` when the server is
    /// down (or wants a login), or connected but did not list what it
    /// offers in time (it answers `initialize` and then never lists: not
    /// ready).
    async fn connect(
        &self,
        events: &SourceEvents,
    ) -> Result<(McpClient, SourceLists), Option<State>> {
        let era = match self.era {
            // The handshake keeps what only its era has (server requests
            // in a session, logs, subscriptions); a server of the
            // 2026-07-28 era alone is spoken to in that era, its input
            // requests reaching the relay like server requests.
            Era::Handshake => EraPolicy::HandshakeFirst,
            // What the server offers its 2026-07-28 clients.
            Era::Modern => EraPolicy::Auto,
        };
        let options = ConnectOptions {
            capabilities: self.capabilities.clone(),
            label: self.spec.name.clone(),
            era,
            http_auth: self.spec.http_auth.clone(),
            ..ConnectOptions::default()
        };
        let handler: Arc<dyn mcpyard_client::ClientHandler> = self.relay.clone();
        let client = tokio::select! {
            r = McpClient::connect(self.spec.transport.clone(), handler, options) => {
                r.map_err(|e| Some(failed_state(&e)))?
            }
            _ = self.stop.cancelled() => return Err(None),
        };
        if self.is_modern_twin() && client.protocol_version() != MODERN_PROTOCOL_VERSION {
            tracing::info!(server = %self.spec.name, "does not speak 2026-07-28; its clients of that era are served through the handshake connection");
            client.shutdown().await;
            return Err(Some(State::NotOffered));
        }
        tracing::info!(server = %self.spec.name, era = ?self.era, "upstream connected");
        *self.client.write().expect("client lock poisoned") = Some(client.clone());
        match self
            .start_session(&client, events, SourceLists::default())
            .await
        {
            Some(lists) => Ok((client, lists)),
            None => {
                *self.client.write().expect("client lock poisoned") = None;
                client.shutdown().await;
                if self.stop.is_cancelled() {
                    return Err(None);
                }
                Err(Some(State::Down {
                    error: format!(
                        "connected, but did not list what it offers within {:?}",
                        self.spec.list_timeout
                    ),
                }))
            }
        }
    }

    /// Marks the server down or waiting for a login (out of the lists,
    /// calls failing with its error) and waits out the backoff, doubling
    /// it. False when the gateway stops meanwhile.
    async fn down(&self, events: &SourceEvents, state: State, backoff: &mut Duration) -> bool {
        if matches!(state, State::NotOffered) {
            // Nothing to retry: the server is of the handshake era.
            self.set_state(state);
            events.down();
            return false;
        }
        match &state {
            State::LoginRequired { error } => {
                tracing::warn!(server = %self.spec.name, %error, "upstream needs a login; retrying in {backoff:?}")
            }
            State::Down { error } => {
                tracing::warn!(server = %self.spec.name, %error, "upstream unavailable; retrying in {backoff:?}")
            }
            _ => {}
        }
        self.set_state(state);
        events.down();
        let waited = tokio::select! {
            _ = tokio::time::sleep(*backoff) => true,
            _ = self.stop.cancelled() => false,
        };
        *backoff = (*backoff * 2).min(BACKOFF_MAX);
        waited
    }

    /// What a new connection or session needs: every list fetched again
    /// and published, and what clients watch subscribed again (the server
    /// forgot the old session's subscriptions). Returns the lists, or
    /// `None` when they did not come within the listing timeout or the
    /// gateway stops.
    async fn start_session(
        &self,
        client: &McpClient,
        events: &SourceEvents,
        previous: SourceLists,
    ) -> Option<SourceLists> {
        let lists = self.fetch_lists(client, &ListKind::ALL, previous).await?;
        // Up and resubscribed before publishing: the publication ends the
        // start-up hold and makes the tools routable again, so a status read
        // right after must not say `connecting`, and a call right after must
        // find a restarted upstream's resource subscriptions renewed.
        self.set_up();
        self.resubscribe(client).await;
        events.publish(lists.clone());
        Some(lists)
    }

    /// [`fetch_lists`] within the listing timeout, yielding to shutdown.
    async fn fetch_lists(
        &self,
        client: &McpClient,
        kinds: &[ListKind],
        lists: SourceLists,
    ) -> Option<SourceLists> {
        tokio::select! {
            fetched = tokio::time::timeout(self.spec.list_timeout, fetch_lists(client, kinds, lists)) => fetched.ok(),
            _ = self.stop.cancelled() => None,
        }
    }

    /// Subscribes a new connection or session to what clients watch.
    async fn resubscribe(&self, client: &McpClient) {
        for uri in self.sessions.subscriptions.uris(self.index) {
            let options = RequestOptions {
                timeout: Some(self.spec.timeout),
                cancel: None,
                ..RequestOptions::default()
            };
            let params = json!({ "uri": uri });
            if let Err(e) = client
                .request(
                    mcpyard_proto::methods::RESOURCES_SUBSCRIBE,
                    Some(params),
                    options,
                )
                .await
            {
                tracing::warn!(server = %self.spec.name, %uri, error = %e, "could not subscribe again");
            }
        }
    }

    /// Whether the connected upstream declared a capability, given as a
    /// JSON pointer into its capabilities (`/resources/subscribe`).
    /// Asked on every call (`/tasks/requests/tools/call`): the pointer's
    /// keys are looked up as they are, without the copies `Value::pointer`
    /// makes to unescape them (no capability name has a `~` or a `/`).
    fn has_capability(&self, pointer: &str) -> bool {
        let Some(client) = self.client() else {
            return false;
        };
        let mut at = client.initialize_result().get("capabilities");
        for key in pointer.split('/').skip(1) {
            at = at.and_then(|v| v.get(key));
        }
        at.is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
    }

    /// Sends a client's request to this upstream on the client's behalf:
    /// the call is registered with the relay so that progress, logs and
    /// requests the upstream makes while serving it reach that client.
    /// Bounded by the context's deadline, else by `timeout`.
    async fn forward(
        &self,
        method: &str,
        mut params: Value,
        context: &CallContext,
        timeout: Option<Duration>,
    ) -> Result<Payload, RouteError> {
        let Some(client) = self.client() else {
            return Err(self.down_error());
        };
        // A 2026-07-28 client's envelope belongs to its own hop: the client
        // library puts this hop's on a connection of that era, and servers
        // refuse one on a handshake-era connection.
        mcpyard_proto::envelope::strip(&mut params);
        // Both hops of the 2026-07-28 era: the server's input requests go
        // back to the client as the server made them (see `pass_through`).
        let pass_through = self.is_modern_twin() && context.era() == Era::Modern;
        if pass_through {
            pass_through::restore_state(&mut params);
        }
        let (ctx, guard) = self.relay.begin(context, &mut params);
        let mut options = RequestOptions {
            timeout,
            deadline: context.deadline,
            cancel: Some(context.cancel.clone()),
            ..RequestOptions::default()
        };
        let on_sent = |id: RequestId| guard.sent_as(&ctx, id);
        let result = if pass_through {
            options.capabilities = Some(pass_through::capabilities(context));
            // Boxed: only clients and servers of the 2026-07-28 era both
            // take this path, and its future would make every call's larger.
            Box::pin(client.request_single_round(method, Some(params), options, on_sent))
                .await
                .map(pass_through::wrap_state)
        } else {
            // Boxed: the exchange's future is most of a call's, and the
            // layers above move theirs whole.
            Box::pin(client.request_with_id(method, Some(params), options, on_sent)).await
        };
        drop(guard);
        result.map_err(|e| {
            if let Some(error) = login_required(&e) {
                return self.credential_lost(error);
            }
            // The deadline was set from this server's timeout: name that.
            let e = match e {
                ClientError::Timeout(_) if context.deadline.is_some() => {
                    ClientError::Timeout(self.spec.timeout)
                }
                other => other,
            };
            RouteError::from_client(&self.spec.name, method, e)
        })
    }

    /// A request of the gateway's own (lists, setLevel), not tied to a client.
    async fn own_request(&self, method: &str, params: Value) -> Result<Value, RouteError> {
        let Some(client) = self.client() else {
            return Err(self.down_error());
        };
        let options = RequestOptions {
            timeout: Some(self.spec.timeout),
            cancel: None,
            ..RequestOptions::default()
        };
        client
            .request(method, Some(params), options)
            .await
            .map_err(|e| match login_required(&e) {
                Some(error) => self.credential_lost(error),
                None => RouteError::from_client(&self.spec.name, method, e),
            })
    }

    /// A call found the credential gone: the upstream waits for a login
    /// (the supervisor drops the connection), and the call says so.
    fn credential_lost(&self, error: String) -> RouteError {
        tracing::warn!(server = %self.spec.name, %error, "upstream credential lost");
        self.set_state(State::LoginRequired {
            error: error.clone(),
        });
        self.credential_lost.notify_one();
        RouteError::Unavailable {
            server: self.spec.name.clone(),
            reason: format!(": {error}"),
        }
    }

    fn current_state(&self) -> State {
        self.health
            .lock()
            .expect("health lock poisoned")
            .state
            .clone()
    }

    fn down_error(&self) -> RouteError {
        let h = self.health.lock().expect("health lock poisoned");
        let reason = match &h.state {
            State::Down { error } | State::LoginRequired { error } => format!(": {error}"),
            State::Connecting => ": still connecting".into(),
            _ => String::new(),
        };
        RouteError::Unavailable {
            server: self.spec.name.clone(),
            reason,
        }
    }
}

#[async_trait]
impl Source for Upstream {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn start(&self, events: SourceEvents) {
        self.relay.attach_catalog(events.catalog.clone());
        if let Some(me) = self.me.upgrade() {
            self.started
                .store(true, std::sync::atomic::Ordering::Release);
            tokio::spawn(me.supervise(events));
        }
    }

    async fn call(&self, request: SourceRequest) -> Result<Payload, RouteError> {
        self.forward(request.method, request.params, &request.context, None)
            .await
    }

    async fn status(&self) -> Value {
        Upstream::status(self)
    }

    fn offers(&self, capability: &str) -> bool {
        self.has_capability(capability)
    }

    async fn request(
        &self,
        method: &str,
        params: Value,
        context: Option<&CallContext>,
    ) -> Result<Value, RouteError> {
        match context {
            Some(context) => self
                .forward(method, params, context, Some(self.spec.timeout))
                .await
                .map(Payload::into_value),
            None => self.own_request(method, params).await,
        }
    }

    async fn notify(&self, method: &str, params: Option<Value>) {
        if let Some(client) = self.client() {
            let _ = client.notify(method, params).await;
        }
    }

    fn unavailable(&self) -> RouteError {
        self.down_error()
    }

    fn health(&self) -> Option<SourceHealth> {
        let status = Upstream::status(self);
        Some(SourceHealth {
            up: status["healthy"].as_bool().unwrap_or(false),
            restarts: status["restarts"].as_u64().unwrap_or(0),
        })
    }

    fn reports_own_usage(&self) -> bool {
        false
    }

    fn carries_trace(&self) -> bool {
        true
    }

    /// The second connection, in the 2026-07-28 era; the legacy SSE
    /// transport has no such era.
    fn second_era(&self, index: usize) -> Option<Arc<dyn Source>> {
        if self.is_modern_twin()
            || matches!(
                self.spec.transport,
                mcpyard_client::TransportSpec::Sse { .. }
            )
        {
            return None;
        }
        let twin = Upstream::new(
            index,
            self.spec.clone(),
            Era::Modern,
            self.sessions.clone(),
            self.relaying.clone(),
            self.stop.child_token(),
        );
        let _ = self.twin.set(twin.clone());
        Some(twin)
    }

    fn is_second_era(&self) -> bool {
        self.is_modern_twin()
    }

    fn serves_both_eras(&self) -> bool {
        self.speaks_modern()
    }

    /// The client sends `notifications/cancelled` and gives up on the call
    /// at its token or deadline.
    fn stops_itself(&self) -> bool {
        true
    }

    async fn stop(&self) {
        // Its own token (a child of the gateway's): a reload stops one
        // upstream, the shutdown every one.
        self.stop.cancel();
        if self.started.load(std::sync::atomic::Ordering::Acquire) {
            self.done.cancelled().await
        }
    }
}
