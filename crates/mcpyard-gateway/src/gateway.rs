//! The gateway facade: sessions, and the dispatch of each client message by
//! method to the catalog, the built-in tools or the owning upstream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpyard_proto::{codes, envelope, methods, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, ListKind, SourceLists};
use crate::config::ConfigError;
use crate::listen::{ListenFilter, Listener, SUBSCRIPTION_ID};
use crate::local::{CatalogCaller, LocalSource, Progress, SourceHandle, ToolContext};
use crate::round_trips::{self, RoundTrips};
use crate::session::is_log_level;
use crate::sessions::{AtCapacity, Sessions};
use crate::tasks::{self, TaskEvent, TaskLimits, TaskRequest, TaskStore};
use crate::upstream::Upstream;
use crate::{builtin, GatewayConfig, Outbound, Session};

/// Where a catalogue source index leads.
enum SourceRef<'a> {
    Builtin,
    Upstream(&'a Arc<Upstream>),
    Local(&'a Arc<dyn LocalSource>),
}

/// The running gateway. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    catalog: Arc<Catalog>,
    sessions: Arc<Sessions>,
    /// Upstream `i` is catalog source `i + 1`; source 0 is the built-in one.
    upstreams: Vec<Arc<Upstream>>,
    /// Local source `i` is catalog source `1 + upstreams.len() + i`.
    locals: Vec<Arc<dyn LocalSource>>,
    /// Which upstream owns each task it created (tasks/* are routed by id).
    tasks: Mutex<HashMap<String, usize>>,
    /// Tasks the gateway runs itself (tools/call with `task`).
    own_tasks: TaskStore,
    /// Stateless-era calls waiting for their client's input.
    round_trips: RoundTrips,
    /// Requests that need the catalogue wait, until this instant, for every
    /// upstream's first connection attempt, so that the first `tools/list`
    /// is whole and the first call finds its tool.
    startup_deadline: tokio::time::Instant,
    session_idle_timeout: Duration,
    max_sessions: usize,
    /// Set once every first attempt has ended (or the deadline passed).
    started: AtomicBool,
    stop: CancellationToken,
}

/// How long requests wait at most for upstreams still making their first
/// connection; one that takes longer joins later with a `list_changed`.
const STARTUP_GRACE: Duration = Duration::from_secs(15);

type Outcome = Result<Value, ErrorObject>;

impl Gateway {
    /// Starts the gateway: each upstream is connected in the background
    /// (one that is down is retried, and left out of the lists meanwhile).
    pub async fn start(config: GatewayConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut sources = vec![(builtin::SOURCE_NAME.to_owned(), builtin::PREFIX.to_owned())];
        sources.extend(
            config
                .upstreams
                .iter()
                .map(|u| (u.name.clone(), u.effective_prefix())),
        );
        sources.extend(config.locals.iter().map(|l| {
            let prefix = l
                .prefix
                .clone()
                .unwrap_or_else(|| format!("{}__", l.source.name()));
            (l.source.name().to_owned(), prefix)
        }));
        let catalog = Arc::new(Catalog::new(sources, config.page_size));
        let mut own = SourceLists::default();
        let mut builtin_tools = builtin::tools();
        builtin_tools.iter_mut().for_each(tasks::advertise);
        own.set(ListKind::Tools, builtin_tools);
        catalog.set_lists(0, Some(own));
        let sessions = Arc::new(Sessions::default());
        let stop = CancellationToken::new();
        let upstreams = config
            .upstreams
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                Upstream::spawn(
                    i + 1,
                    spec.clone(),
                    catalog.clone(),
                    sessions.clone(),
                    config.client_request_timeout,
                    config.sampler.clone(),
                    stop.child_token(),
                )
            })
            .collect::<Vec<_>>();
        let first_local = 1 + upstreams.len();
        let locals: Vec<Arc<dyn LocalSource>> =
            config.locals.iter().map(|l| l.source.clone()).collect();
        let (refresh_tx, refresh_rx) = tokio::sync::mpsc::unbounded_channel();
        for (i, local) in locals.iter().enumerate() {
            publish_local(&catalog, &sessions, first_local + i, local.as_ref());
            local.attach(SourceHandle {
                index: first_local + i,
                refresh: refresh_tx.clone(),
            });
        }
        let own_tasks = TaskStore::new(TaskLimits::default(), {
            let sessions = sessions.clone();
            move |event: TaskEvent| {
                if let Some(session) = event.owner.as_deref().and_then(|id| sessions.get(id)) {
                    session.notify(event.notification(), None);
                }
            }
        });
        let gateway = Self {
            inner: Arc::new(Inner {
                own_tasks,
                round_trips: RoundTrips::new(config.client_request_timeout),
                catalog,
                sessions,
                upstreams,
                locals,
                tasks: Mutex::default(),
                startup_deadline: tokio::time::Instant::now() + STARTUP_GRACE,
                session_idle_timeout: config.session_idle_timeout,
                max_sessions: config.max_sessions,
                started: AtomicBool::new(false),
                stop,
            }),
        };
        tokio::spawn(refresh_locals(Arc::downgrade(&gateway.inner), refresh_rx));
        tokio::spawn(expire_idle_sessions(Arc::downgrade(&gateway.inner)));
        Ok(gateway)
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// Every tool of the catalogue, as `tools/list` shows them.
    pub(crate) fn listed_tools(&self) -> Vec<Value> {
        self.inner
            .catalog
            .view()
            .list(ListKind::Tools)
            .as_ref()
            .clone()
    }

    /// Registers a session created by a transport, so later requests with
    /// its id find it. At `max_sessions`, the idle session unused for
    /// longest is ended to make room; when none is idle the session is
    /// refused (false), and the transport should say so.
    pub fn register_session(&self, session: Arc<Session>) -> bool {
        session.touch();
        let owns_tasks = |id: &str| self.inner.own_tasks.has_tasks(id);
        match self
            .inner
            .sessions
            .insert_within(self.inner.max_sessions, session, owns_tasks)
        {
            Ok(None) => true,
            Ok(Some(oldest)) => {
                // A session id is the client's credential for its session: never logged.
                tracing::info!("ended the least recently used idle session: at the session limit");
                self.retire(&oldest);
                true
            }
            Err(AtCapacity) => {
                tracing::warn!(
                    limit = self.inner.max_sessions,
                    "refused a new session: every session is in use"
                );
                false
            }
        }
    }

    /// The live session with this id; looking it up counts as using it.
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.inner.sessions.get(id)?;
        session.touch();
        Some(session)
    }

    /// Ends and forgets a session. Returns false when it was unknown.
    pub fn end_session(&self, id: &str) -> bool {
        match self.inner.sessions.remove(id) {
            Some(s) => {
                self.retire(&s);
                true
            }
            None => false,
        }
    }

    /// Ends a session already taken out of the registry: its streams, its
    /// tasks and the subscriptions only it held.
    fn retire(&self, session: &Session) {
        session.end();
        self.inner.own_tasks.end_owner(session.id());
        self.unsubscribe_orphans(session.id());
    }

    /// Tells upstreams about the resources that only an ended subscriber (a
    /// session, or a listen stream) watched, in the background.
    fn unsubscribe_orphans(&self, subscriber: &str) {
        let orphaned = self.inner.sessions.subscriptions.remove_session(subscriber);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for (source, uri) in orphaned {
            let Some(upstream) = self.upstream(source).cloned() else {
                continue;
            };
            runtime.spawn(async move {
                let params = json!({ "uri": uri });
                if let Err(e) = upstream.request(methods::RESOURCES_UNSUBSCRIBE, params).await {
                    tracing::debug!(server = %upstream.spec.name, error = %e, "unsubscribe after the session ended failed");
                }
            });
        }
    }

    /// Waits until every upstream has ended its first connection attempt
    /// (connected or failed), at most until the startup deadline or until
    /// `cancel` fires. Free once that has happened.
    pub async fn wait_for_startup(&self, cancel: &CancellationToken) {
        let inner = &self.inner;
        if inner.started.load(Ordering::Acquire) {
            return;
        }
        let all_attempted = async {
            for upstream in &inner.upstreams {
                upstream.first_attempt_ended().await;
            }
        };
        tokio::select! {
            () = all_attempted => inner.started.store(true, Ordering::Release),
            () = tokio::time::sleep_until(inner.startup_deadline) => inner.started.store(true, Ordering::Release),
            () = cancel.cancelled() => {}
        }
    }

    /// Handles one message from a client. Returns the response for a
    /// request, except one the client cancelled (the specification wants
    /// no answer then); `None` for notifications and responses. `related`
    /// is the stream of this request (a POST's SSE answer), where progress
    /// and requests to the client made while serving it go.
    ///
    /// A request carrying the 2026-07-28 envelope is served in that era
    /// whatever the transport: on a one-request session of its own, its
    /// result stamped with the era's fields.
    pub async fn handle(
        &self,
        session: &Arc<Session>,
        msg: Message,
        related: Option<Outbound>,
    ) -> Option<Message> {
        match msg {
            Message::Request { id, method, params } => {
                let request_session = match era_session(session, params.as_ref()) {
                    Ok(s) => s,
                    Err(e) => return Some(Message::error(Some(id), e)),
                };
                let derived = !Arc::ptr_eq(&request_session, session);
                if request_session.is_stateless() {
                    adopt_request_envelope(&request_session, params.as_ref());
                }
                // On a connection (stdio) the era's streams are the connection's own.
                let related =
                    related.or_else(|| derived.then(|| request_session.stream()).flatten());
                // Registered on the connection's session, so that its
                // `notifications/cancelled` finds the request.
                let cancel = session.begin_request(&id);
                let mut outcome = if method == methods::SUBSCRIPTIONS_LISTEN {
                    self.listen(&request_session, &id, params, related, &cancel)
                        .await
                } else if request_session.is_stateless() && round_trips::supports_input(&method) {
                    self.round_trip(&request_session, &method, params, related, &cancel)
                        .await
                } else {
                    self.dispatch(&request_session, &method, params, related, cancel.clone())
                        .await
                };
                session.finish_request(&id);
                if derived {
                    request_session.end();
                }
                if cancel.is_cancelled() {
                    return None;
                }
                if let Ok(result) = &mut outcome {
                    if request_session.is_stateless() {
                        stamp_stateless_result(&method, result);
                    } else {
                        unstamp_for_handshake_era(result);
                    }
                }
                Some(match outcome {
                    Ok(result) => Message::response(id, result),
                    Err(e) => Message::error(Some(id), e),
                })
            }
            Message::Notification { method, params } => {
                self.on_notification(session, &method, params).await;
                None
            }
            Message::Response { id, result } => {
                session.resolve(&id, Ok(result));
                None
            }
            Message::Error {
                id: Some(id),
                error,
            } => {
                session.resolve(&id, Err(error));
                None
            }
            Message::Error { id: None, error } => {
                tracing::debug!(%error, "client sent an error without id");
                None
            }
        }
    }

    /// A stateless request whose call may need the client: its first leg
    /// starts the call, a retry carrying `requestState` resumes it (see
    /// `round_trips`).
    async fn round_trip(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Option<Value>,
        related: Option<Outbound>,
        client_gone: &CancellationToken,
    ) -> Outcome {
        let params = params.unwrap_or_else(|| json!({}));
        let trips = &self.inner.round_trips;
        if params.get("requestState").is_some() {
            return trips.resume(method, &params, client_gone).await;
        }
        let identity = round_trips::request_identity(method, &params);
        let gateway = self.clone();
        let session = session.clone();
        let method = method.to_owned();
        let start = move |sink, call_cancel| {
            session.accept_input(sink);
            async move {
                gateway
                    .dispatch(&session, &method, Some(params), related, call_cancel)
                    .await
            }
        };
        trips.first_leg(identity, start, client_gone).await
    }

    async fn dispatch(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: Option<Value>,
        related: Option<Outbound>,
        cancel: CancellationToken,
    ) -> Outcome {
        let params = params.unwrap_or_else(|| json!({}));
        if needs_upstreams(method, &params) {
            self.wait_for_startup(&cancel).await;
        }
        let cursor = || params.get("cursor").and_then(Value::as_str);
        match method {
            methods::INITIALIZE => Ok(self.initialize(session, &params)),
            methods::SERVER_DISCOVER => Ok(self.discover()),
            methods::PING => Ok(json!({})),
            methods::TOOLS_LIST => self.inner.catalog.page(ListKind::Tools, cursor()),
            methods::RESOURCES_LIST => self.inner.catalog.page(ListKind::Resources, cursor()),
            methods::RESOURCES_TEMPLATES_LIST => self
                .inner
                .catalog
                .page(ListKind::ResourceTemplates, cursor()),
            methods::PROMPTS_LIST => self.inner.catalog.page(ListKind::Prompts, cursor()),
            methods::TOOLS_CALL => match TaskRequest::from_params(&params)? {
                Some(task) if !self.runs_tasks_natively(&params)? => {
                    self.start_task(session, params, task)
                }
                _ => self.call_tool(session, params, related, cancel).await,
            },
            methods::PROMPTS_GET => {
                let (upstream, params) = self.route_prompt(params)?;
                upstream
                    .forward(method, params, session, related, cancel)
                    .await
            }
            methods::RESOURCES_READ => match self.route_resource(&params) {
                Ok(upstream) => {
                    upstream
                        .forward(method, params, session, related, cancel)
                        .await
                }
                Err(not_found) => {
                    self.read_unlisted_resource(params, session, related, cancel, not_found)
                        .await
                }
            },
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.change_subscription(method, params, session, related, cancel)
                    .await
            }
            methods::COMPLETION_COMPLETE => {
                let (upstream, params) = self.route_completion(params)?;
                upstream
                    .forward(method, params, session, related, cancel)
                    .await
            }
            methods::LOGGING_SET_LEVEL => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .filter(|l| is_log_level(l))
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(
                            "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        )
                    })?;
                session.update(|n| n.log_level = Some(level.to_owned()));
                Ok(json!({}))
            }
            "tasks/get" | "tasks/result" | "tasks/cancel" => {
                let task_id = params
                    .get("taskId")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorObject::invalid_params("`taskId` must be a string"))?;
                let own = &self.inner.own_tasks;
                if own.owns(task_id) {
                    let owner = task_owner(session);
                    return match method {
                        "tasks/get" => own.get(task_id, owner).map_err(Into::into),
                        "tasks/cancel" => own.cancel(task_id, owner).map_err(Into::into),
                        _ => tokio::select! {
                            r = own.result(task_id, owner, related) => r,
                            _ = cancel.cancelled() => Err(ErrorObject::new(codes::REQUEST_TIMEOUT, "the request was cancelled")),
                        },
                    };
                }
                let upstream = self.route_task(&params)?;
                upstream
                    .forward(method, params, session, related, cancel)
                    .await
            }
            "tasks/list" => self.list_tasks(session, cursor()).await,
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    async fn on_notification(&self, session: &Arc<Session>, method: &str, params: Option<Value>) {
        match method {
            methods::NOTIFICATION_INITIALIZED => session.update(|n| n.initialized = true),
            methods::NOTIFICATION_CANCELLED => {
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                if let Some(id) = id {
                    session.cancel_request(&id);
                }
            }
            methods::NOTIFICATION_ROOTS_LIST_CHANGED => {
                for u in &self.inner.upstreams {
                    u.notify(method, None).await;
                }
            }
            _ => tracing::debug!(method, "client notification ignored"),
        }
    }

    fn server_capabilities() -> Value {
        json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
            "tasks": tasks::capability(),
        })
    }

    fn server_info() -> Value {
        json!({"name": "mcpyard", "title": "mcpyard MCP gateway", "version": env!("CARGO_PKG_VERSION")})
    }

    const INSTRUCTIONS: &'static str = "mcpyard aggregates several MCP servers behind one endpoint. Tool names are prefixed with their server's name (`server__tool`). Call `mcpyard__status` to see every server and its health, and `mcpyard__docs` for reference pages.";

    fn initialize(&self, session: &Session, params: &Value) -> Value {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = mcpyard_proto::negotiate(requested);
        session.update(|n| {
            n.protocol_version = version.to_owned();
            n.capabilities = params.get("capabilities").cloned().unwrap_or_default();
            n.client_info = params.get("clientInfo").cloned().unwrap_or_default();
        });
        json!({
            "protocolVersion": version,
            "capabilities": Self::server_capabilities(),
            "serverInfo": Self::server_info(),
            "instructions": Self::INSTRUCTIONS,
        })
    }

    /// `server/discover` (2026-07-28): what `initialize` would say, without
    /// creating anything.
    fn discover(&self) -> Value {
        json!({
            "supportedVersions": mcpyard_proto::SUPPORTED,
            "capabilities": Self::server_capabilities(),
            "serverInfo": Self::server_info(),
            "instructions": Self::INSTRUCTIONS,
        })
    }

    fn upstream(&self, source: usize) -> Option<&Arc<Upstream>> {
        match self.source(source) {
            Some(SourceRef::Upstream(u)) => Some(u),
            _ => None,
        }
    }

    fn source(&self, index: usize) -> Option<SourceRef<'_>> {
        let upstreams = self.inner.upstreams.len();
        match index {
            0 => Some(SourceRef::Builtin),
            i if i <= upstreams => self.inner.upstreams.get(i - 1).map(SourceRef::Upstream),
            i => self
                .inner
                .locals
                .get(i - 1 - upstreams)
                .map(SourceRef::Local),
        }
    }

    pub(crate) async fn call_tool(
        &self,
        session: &Arc<Session>,
        mut params: Value,
        related: Option<Outbound>,
        cancel: CancellationToken,
    ) -> Outcome {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`name` must be a string"))?;
        if let Some(args) = params.get("arguments") {
            if !args.is_object() && !args.is_null() {
                return Err(ErrorObject::invalid_params("`arguments` must be an object"));
            }
        }
        let view = self.inner.catalog.view();
        let Some(route) = view.tool(name) else {
            return Err(self.unknown_name("tool", name, &view));
        };
        let source = route.source;
        let tool = route.name.clone();
        drop(view);
        let upstream = match self.source(source) {
            Some(SourceRef::Upstream(u)) => u,
            Some(SourceRef::Builtin) => {
                let arguments = params
                    .get("arguments")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                return Ok(match tool.as_str() {
                    "status" => self.status().await,
                    _ => builtin::docs(&arguments),
                });
            }
            Some(SourceRef::Local(local)) => {
                let arguments = match params.get_mut("arguments").map(Value::take) {
                    Some(Value::Null) | None => json!({}),
                    Some(a) => a,
                };
                let ctx = ToolContext {
                    cancel: cancel.clone(),
                    progress: Progress::new(session, related.clone(), &params),
                    catalog: CatalogCaller {
                        gateway: Arc::downgrade(&self.inner),
                        session: session.clone(),
                        related,
                        cancel: cancel.clone(),
                    },
                };
                return tokio::select! {
                    r = local.call(&tool, arguments, ctx) => r,
                    _ = cancel.cancelled() => Err(ErrorObject::new(codes::REQUEST_TIMEOUT, "the call was cancelled")),
                };
            }
            None => return Err(ErrorObject::internal("catalog route to a missing source")),
        };
        params["name"] = Value::String(tool);
        let result = upstream
            .forward(methods::TOOLS_CALL, params, session, related, cancel)
            .await?;
        if let Some(task_id) = result
            .get("task")
            .and_then(|t| t.get("taskId"))
            .and_then(Value::as_str)
        {
            self.inner
                .tasks
                .lock()
                .expect("tasks lock poisoned")
                .insert(task_id.to_owned(), source);
        }
        Ok(result)
    }

    fn route_prompt(&self, mut params: Value) -> Result<(&Arc<Upstream>, Value), ErrorObject> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`name` must be a string"))?;
        let view = self.inner.catalog.view();
        let Some(route) = view.prompt(name) else {
            return Err(self.unknown_name("prompt", name, &view));
        };
        let upstream = self
            .upstream(route.source)
            .ok_or_else(|| ErrorObject::internal("catalog route to a missing source"))?;
        params["name"] = Value::String(route.name.clone());
        Ok((upstream, params))
    }

    /// -32603 naming the server when the name belongs to a source that is
    /// down, else -32602 for a name nobody offers.
    fn unknown_name(&self, what: &str, name: &str, view: &crate::catalog::View) -> ErrorObject {
        match view.unavailable(name).and_then(|s| self.upstream(s)) {
            Some(upstream) => upstream.unavailable(),
            None => ErrorObject::invalid_params(format!("Unknown {what}: {name}")),
        }
    }

    fn route_resource(&self, params: &Value) -> Result<&Arc<Upstream>, ErrorObject> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`uri` must be a string"))?;
        self.inner
            .catalog
            .view()
            .resource_source(uri)
            .and_then(|s| self.upstream(s))
            .ok_or_else(|| {
                ErrorObject::new(
                    codes::RESOURCE_NOT_FOUND,
                    format!("Resource not found: {uri}"),
                )
                .with_data(json!({"uri": uri}))
            })
    }

    /// A URI no source lists (a resource that does not exist yet, or one a
    /// template does not describe) is read from every upstream that offers
    /// resources, and the first that has it answers.
    async fn read_unlisted_resource(
        &self,
        params: Value,
        session: &Arc<Session>,
        related: Option<Outbound>,
        cancel: CancellationToken,
        not_found: ErrorObject,
    ) -> Outcome {
        for upstream in &self.inner.upstreams {
            if !upstream.has_capability("/resources") {
                continue;
            }
            let outcome = upstream
                .forward(
                    methods::RESOURCES_READ,
                    params.clone(),
                    session,
                    related.clone(),
                    cancel.clone(),
                )
                .await;
            if outcome.is_ok() {
                return outcome;
            }
        }
        Err(not_found)
    }

    /// `resources/subscribe` and `unsubscribe`. Several clients share one
    /// upstream connection, so the upstream is asked only for a URI's first
    /// subscriber and told only after its last (see `subscriptions`). A URI
    /// no source lists goes to every upstream that offers subscriptions, and
    /// succeeds when any accepts. Stateless requests, which have no stream
    /// to receive updates on, are passed on as they are.
    async fn change_subscription(
        &self,
        method: &str,
        params: Value,
        session: &Arc<Session>,
        related: Option<Outbound>,
        cancel: CancellationToken,
    ) -> Outcome {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`uri` must be a string"))?
            .to_owned();
        let (targets, not_found) = self.subscription_targets(&params);
        let subscriptions = &self.inner.sessions.subscriptions;
        let tracked = !session.is_stateless();
        let subscribe = method == methods::RESOURCES_SUBSCRIBE;
        let mut accepted = None;
        let mut refused = None;
        for upstream in targets {
            let source = upstream.index();
            let ask = !tracked
                || if subscribe {
                    subscriptions.add(source, &uri, session.id())
                } else {
                    subscriptions.remove(source, &uri, session.id())
                };
            let outcome = if ask {
                upstream
                    .forward(
                        method,
                        params.clone(),
                        session,
                        related.clone(),
                        cancel.clone(),
                    )
                    .await
            } else {
                Ok(json!({}))
            };
            match outcome {
                Ok(result) => accepted = Some(result),
                Err(e) => {
                    if tracked && subscribe {
                        subscriptions.remove(source, &uri, session.id());
                    }
                    refused.get_or_insert(e);
                }
            }
        }
        match (accepted, not_found, refused) {
            (Some(result), _, _) => Ok(result),
            (None, Some(not_found), _) => Err(not_found),
            (None, None, Some(e)) => Err(e),
            (None, None, None) => Err(ErrorObject::internal("no upstream to subscribe at")),
        }
    }

    /// Where a subscription to `params.uri` goes: the upstream that lists
    /// it; for a URI no source lists, every upstream that offers
    /// subscriptions, with the not-found error to answer if none accepts.
    fn subscription_targets(&self, params: &Value) -> (Vec<&Arc<Upstream>>, Option<ErrorObject>) {
        match self.route_resource(params) {
            Ok(upstream) => (vec![upstream], None),
            Err(not_found) => (
                self.inner
                    .upstreams
                    .iter()
                    .filter(|u| u.has_capability("/resources/subscribe"))
                    .collect(),
                Some(not_found),
            ),
        }
    }

    /// `subscriptions/listen` (2026-07-28; see `listen`): acknowledges on
    /// the request's own stream, registers the stream for the changes it
    /// asked for, subscribes the upstreams to its URIs, and answers once the
    /// client has gone or the gateway stops. Everything is undone when the
    /// call ends, however it ends.
    async fn listen(
        &self,
        session: &Session,
        id: &RequestId,
        params: Option<Value>,
        related: Option<Outbound>,
        cancel: &CancellationToken,
    ) -> Outcome {
        if !session.is_stateless() {
            return Err(
                ErrorObject::method_not_found(methods::SUBSCRIPTIONS_LISTEN).with_data(json!({
                    "reason": "subscriptions/listen belongs to protocol 2026-07-28; in a session, changes come on the GET stream and resources/subscribe watches a resource"
                })),
            );
        }
        let filter = ListenFilter::from_params(params.as_ref().unwrap_or(&Value::Null))
            .ok_or_else(|| ErrorObject::invalid_params("`notifications` must be an object"))?;
        let Some(stream) = related else {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "subscriptions/listen is answered with an event stream: accept text/event-stream",
            ));
        };
        let listener = Arc::new(Listener {
            filter,
            stream: stream.clone(),
            subscription_id: id.clone(),
        });
        stream
            .send(listener.acknowledgment())
            .await
            .map_err(|_| ErrorObject::internal("the client went away"))?;
        let key = format!("listen-{}", uuid::Uuid::new_v4().simple());
        let _registered = ListenRegistration {
            gateway: self.clone(),
            key: key.clone(),
        };
        self.inner.sessions.add_listener(&key, listener.clone());
        if !listener.filter.resource_uris.is_empty() {
            // Which upstream has a URI is known once they have connected.
            self.wait_for_startup(&self.inner.stop).await;
        }
        for uri in &listener.filter.resource_uris {
            self.watch(uri, &key).await;
        }
        tokio::select! {
            () = stream.closed() => {}
            () = cancel.cancelled() => {}
            () = self.inner.stop.cancelled() => {}
        }
        Ok(json!({ "_meta": { SUBSCRIPTION_ID: id } }))
    }

    /// Subscribes the upstreams behind `uri` for subscriber `key`, asking an
    /// upstream only when `key` is its first subscriber there.
    async fn watch(&self, uri: &str, key: &str) {
        let params = json!({ "uri": uri });
        let subscriptions = &self.inner.sessions.subscriptions;
        for upstream in self.subscription_targets(&params).0 {
            if !subscriptions.add(upstream.index(), uri, key) {
                continue;
            }
            if let Err(e) = upstream
                .request(methods::RESOURCES_SUBSCRIBE, params.clone())
                .await
            {
                subscriptions.remove(upstream.index(), uri, key);
                tracing::debug!(server = %upstream.spec.name, %uri, error = %e, "listen: the upstream refused the subscription");
            }
        }
    }

    fn route_completion(&self, mut params: Value) -> Result<(&Arc<Upstream>, Value), ErrorObject> {
        let reference = params
            .get("ref")
            .cloned()
            .ok_or_else(|| ErrorObject::invalid_params("`ref` is required"))?;
        match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").cloned().unwrap_or_default();
                let (upstream, routed) = self.route_prompt(json!({ "name": name }))?;
                params["ref"]["name"] = routed["name"].clone();
                Ok((upstream, params))
            }
            Some("ref/resource") => {
                let uri = reference.get("uri").cloned().unwrap_or_default();
                Ok((self.route_resource(&json!({ "uri": uri }))?, params))
            }
            _ => Err(ErrorObject::invalid_params(
                "`ref.type` must be ref/prompt or ref/resource",
            )),
        }
    }

    fn route_task(&self, params: &Value) -> Result<&Arc<Upstream>, ErrorObject> {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`taskId` must be a string"))?;
        let source = self
            .inner
            .tasks
            .lock()
            .expect("tasks lock poisoned")
            .get(task_id)
            .copied();
        source
            .and_then(|s| self.upstream(s))
            .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown task: {task_id}")))
    }

    /// The session's own tasks a page at a time; the last page also
    /// carries the tasks upstreams created.
    async fn list_tasks(&self, session: &Session, cursor: Option<&str>) -> Outcome {
        let mut page = self.inner.own_tasks.list(task_owner(session), cursor)?;
        if page.get("nextCursor").is_some() {
            return Ok(page);
        }
        let owners: Vec<usize> = {
            let tasks = self.inner.tasks.lock().expect("tasks lock poisoned");
            let mut s: Vec<usize> = tasks.values().copied().collect();
            s.sort_unstable();
            s.dedup();
            s
        };
        let mut all = Vec::new();
        for source in owners {
            if let Some(u) = self.upstream(source) {
                if let Ok(r) = u.request("tasks/list", json!({})).await {
                    if let Some(items) = r.get("tasks").and_then(Value::as_array) {
                        all.extend(items.iter().cloned());
                    }
                }
            }
        }
        if let Some(tasks) = page.get_mut("tasks").and_then(Value::as_array_mut) {
            tasks.extend(all);
        }
        Ok(page)
    }

    /// Whether this `tools/call` goes to an upstream that runs tasks itself
    /// (its `task` then passes through). -32602 for an unknown tool, before
    /// any task exists.
    fn runs_tasks_natively(&self, params: &Value) -> Result<bool, ErrorObject> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("`name` must be a string"))?;
        let view = self.inner.catalog.view();
        let route = view
            .tool(name)
            .ok_or_else(|| self.unknown_name("tool", name, &view))?;
        Ok(self
            .upstream(route.source)
            .is_some_and(|u| u.has_capability("/tasks/requests/tools/call")))
    }

    /// Answers a task-augmented `tools/call` at once with a task and runs
    /// the call in the background; its outcome goes to `tasks/result`.
    fn start_task(&self, session: &Arc<Session>, mut params: Value, task: TaskRequest) -> Outcome {
        if let Some(p) = params.as_object_mut() {
            p.remove("task");
        }
        let (created, handle) =
            self.inner
                .own_tasks
                .create(task_owner(session), task.ttl, &self.inner.stop)?;
        let gateway = self.clone();
        let session = session.clone();
        tokio::spawn(async move {
            let cancel = handle.cancellation();
            let signal = handle.signal();
            // No `related` stream: the POST that created the task has been
            // answered; progress goes to the session stream, and requests
            // for the client to the stream of its `tasks/result`.
            let call = gateway.call_tool(&session, params, None, cancel);
            tasks::CURRENT_TASK.scope(signal, handle.run(call)).await;
        });
        Ok(created)
    }

    async fn status(&self) -> Value {
        let view = self.inner.catalog.view();
        let counts = json!({
            "tools": view.len(ListKind::Tools),
            "resources": view.len(ListKind::Resources),
            "resourceTemplates": view.len(ListKind::ResourceTemplates),
            "prompts": view.len(ListKind::Prompts),
        });
        let mut sources: Vec<Value> = self.inner.upstreams.iter().map(|u| u.status()).collect();
        for local in &self.inner.locals {
            sources.push(local.status().await);
        }
        builtin::status(sources, counts, &view.collisions, self.inner.sessions.len())
    }

    /// Stops every upstream (child processes killed and reaped) and ends
    /// every session.
    pub async fn shutdown(&self) {
        for s in self.inner.sessions.drain() {
            s.end();
        }
        self.inner.stop.cancel();
        for u in &self.inner.upstreams {
            u.stopped().await;
        }
    }
}

/// Unregisters a listen stream when its call ends, however it ends (the
/// client going away drops the call).
struct ListenRegistration {
    gateway: Gateway,
    key: String,
}

impl Drop for ListenRegistration {
    fn drop(&mut self) {
        self.gateway.inner.sessions.remove_listener(&self.key);
        self.gateway.unsubscribe_orphans(&self.key);
    }
}

/// Ends sessions idle past the configured timeout, until the gateway goes.
async fn expire_idle_sessions(inner: std::sync::Weak<Inner>) {
    let (limit, stop) = match inner.upgrade() {
        Some(i) => (i.session_idle_timeout, i.stop.clone()),
        None => return,
    };
    let mut tick =
        tokio::time::interval((limit / 4).clamp(Duration::from_secs(1), Duration::from_secs(60)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let Some(inner) = inner.upgrade() else { return };
        let gateway = Gateway::from_inner(inner);
        let owns_tasks = |id: &str| gateway.inner.own_tasks.has_tasks(id);
        for id in gateway.inner.sessions.idle_since(limit, owns_tasks) {
            tracing::info!("a session ended after {limit:?} without use");
            gateway.end_session(&id);
        }
    }
}

/// Whether a request's answer depends on the upstreams, and so waits for
/// their first connection at start. The status tool does not: it is how one
/// sees which of them are still connecting.
fn needs_upstreams(method: &str, params: &Value) -> bool {
    match method {
        methods::INITIALIZE | methods::SERVER_DISCOVER | methods::PING => false,
        methods::TOOLS_CALL => {
            params.get("name").and_then(Value::as_str) != Some(builtin::STATUS_TOOL)
        }
        _ => true,
    }
}

/// Whose tasks a request sees: its session's; none (unbound) in the
/// stateless era, where every request is a session of its own.
fn task_owner(session: &Session) -> Option<&str> {
    (!session.is_stateless()).then(|| session.id())
}

/// The session a request is served on: the connection's own, or, for a
/// request carrying the 2026-07-28 envelope on a connection that is not
/// already of that era, a one-request session built from its envelope.
fn era_session(
    session: &Arc<Session>,
    params: Option<&Value>,
) -> Result<Arc<Session>, ErrorObject> {
    if session.is_stateless() || !mcpyard_proto::has_envelope(params) {
        return Ok(session.clone());
    }
    let envelope = mcpyard_proto::Envelope::from_params(params)?;
    Ok(Session::for_request(session, envelope))
}

/// A stateless request carries what `initialize` would have said in its
/// `_meta`; the transport took the version and capabilities, this takes the
/// rest.
fn adopt_request_envelope(session: &Session, params: Option<&Value>) {
    let Some(meta) = mcpyard_proto::meta(params) else {
        return;
    };
    let client_info = meta.get(envelope::CLIENT_INFO_KEY).cloned();
    let log_level = meta
        .get(envelope::LOG_LEVEL_KEY)
        .and_then(Value::as_str)
        .filter(|l| is_log_level(l))
        .map(str::to_owned);
    session.update(|n| {
        if let Some(info) = client_info {
            n.client_info = info;
        }
        if log_level.is_some() {
            n.log_level = log_level;
        }
    });
}

/// Results of the stateless era (2026-07-28) carry `resultType`; the
/// cacheable ones (lists, reads, discovery) a TTL and a cache scope; every
/// one names the server in `_meta`. Upstream results pass through an older
/// era, so the gateway adds what they lack.
fn stamp_stateless_result(method: &str, result: &mut Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    obj.entry("resultType")
        .or_insert_with(|| Value::String("complete".into()));
    let cacheable = matches!(
        method,
        methods::SERVER_DISCOVER
            | methods::TOOLS_LIST
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
    );
    if cacheable {
        obj.entry("ttlMs").or_insert_with(|| json!(0));
        // Lists may differ per client once exposure policy applies.
        obj.entry("cacheScope")
            .or_insert_with(|| Value::String("private".into()));
    }
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(envelope::SERVER_INFO_KEY.into(), Gateway::server_info());
    }
}

/// A result a 2026-07-28 upstream gave goes to a client of an older era
/// without that era's fields, and without the upstream's name in `_meta`.
fn unstamp_for_handshake_era(result: &mut Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    if obj.get("resultType").and_then(Value::as_str) == Some("complete") {
        obj.remove("resultType");
    }
    obj.remove("ttlMs");
    obj.remove("cacheScope");
    if let Some(meta) = obj.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(envelope::SERVER_INFO_KEY);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
}

/// Puts a local source's current tools into the catalogue, telling clients
/// when that changed the list.
fn publish_local(catalog: &Catalog, sessions: &Sessions, index: usize, source: &dyn LocalSource) {
    let mut lists = SourceLists::default();
    let mut tools = source.tools();
    tools.iter_mut().for_each(tasks::advertise);
    lists.set(ListKind::Tools, tools);
    if catalog
        .set_lists(index, Some(lists))
        .contains(&ListKind::Tools)
    {
        sessions.broadcast(&Message::notification(
            methods::NOTIFICATION_TOOLS_LIST_CHANGED,
            None,
        ));
    }
}

/// Re-reads a local source's tools each time it says they changed.
async fn refresh_locals(
    gateway: std::sync::Weak<Inner>,
    mut refresh: tokio::sync::mpsc::UnboundedReceiver<usize>,
) {
    while let Some(index) = refresh.recv().await {
        let Some(inner) = gateway.upgrade() else {
            return;
        };
        let first_local = 1 + inner.upstreams.len();
        if let Some(local) = index
            .checked_sub(first_local)
            .and_then(|i| inner.locals.get(i))
        {
            publish_local(&inner.catalog, &inner.sessions, index, local.as_ref());
        }
    }
}
