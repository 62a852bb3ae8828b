//! The gateway: composes sources, catalog, router and downstream at start,
//! and dispatches each client message by method; `reload.rs` changes what
//! it serves while it runs; `sessions.rs` is what the front doors ask of
//! the sessions they hold, here and on the other replicas.

mod reload;
mod replicas;
mod sessions;
mod task_requests;

pub use reload::{Governance, Reconfiguration, Reloaded};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpyard_proto::{codes, methods, ErrorObject, Message, Payload, RequestId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::catalog::{apps, resource_uri, Catalog};

use crate::call::ItemKind;
use crate::call::{Era, ListItem, ListKind};
use crate::config::ConfigError;
use crate::downstream::announce::{discover, initialize};
use crate::downstream::{era, is_log_level, round_trips, Downstream, SessionCaps, Sessions};
use crate::governance::trace::{self};
use crate::router::stack::{self, StackParts};
use crate::router::{Router, Slot};
use crate::source::builtin::{self, Builtin};
use crate::source::mcp::pass_through;
use crate::source::{ClientHandle, Progress, Relaying, Source, SourceEvents};
use crate::tasks::{self, TaskEvent, TaskLimits, TaskStore};
use crate::{GatewayConfig, Metrics, Outbound, RouteError, Session};

/// The running gateway. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Gateway {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    router: Arc<Router>,
    downstream: Arc<Downstream>,
    /// Cancelled at each source's first report. Requests that need the
    /// catalogue wait for all of them, until `startup_deadline`, so that
    /// the first `tools/list` is whole and the first call finds its tool.
    first_reports: Vec<CancellationToken>,
    startup_deadline: tokio::time::Instant,
    /// Set once every source has reported (or the deadline passed).
    started: AtomicBool,
    /// The second connections, for 2026-07-28 clients, started when the
    /// first such client comes.
    modern: ModernEra,
    stop: CancellationToken,
    metrics: Option<Arc<Metrics>>,
    /// What a source added by a reload is made with.
    relaying: Relaying,
    /// The stack's parts, of which a reload replaces the policy, the rate
    /// limits and the guardrails.
    stack: StackParts,
    /// Held by a reload: one at a time.
    reloading: tokio::sync::Mutex<()>,
    /// The configuration served and its reloads, for the status.
    configured: Arc<crate::source::builtin::Configured>,
    /// Where sessions are shared with the other replicas.
    state: Arc<dyn crate::state::StateBackend>,
    replica: String,
}

/// What a client's request gets.
#[derive(Debug)]
pub enum Answer {
    /// The response to send.
    Reply(Message),
    /// The client cancelled the request: MCP wants no response to it.
    Withheld(RequestId),
}

impl Answer {
    /// The response to send, if any.
    pub fn into_reply(self) -> Option<Message> {
        match self {
            Self::Reply(msg) => Some(msg),
            Self::Withheld(_) => None,
        }
    }

    /// A response even for a cancelled request, for a door that must
    /// answer each request with something (an HTTP POST).
    pub fn into_message(self) -> Message {
        match self {
            Self::Reply(msg) => msg,
            Self::Withheld(id) => Message::error(
                Some(id),
                ErrorObject::new(codes::REQUEST_TIMEOUT, "the request was cancelled"),
            ),
        }
    }
}

/// How long requests wait at most for sources still making their first
/// report; one that takes longer joins later with a `list_changed`.
const STARTUP_GRACE: Duration = Duration::from_secs(15);

/// A server may offer a 2026-07-28 client something else than a handshake
/// client (tools that ask for input with `input_required`, say), and one
/// connection speaks one era. So each upstream that can speak both gets a
/// second connection, in that era, when the first client of the era comes;
/// until it is up (and for a server of the handshake era alone) such
/// clients are served through the first connection.
#[derive(Debug, Default)]
struct ModernEra {
    /// (second instance's slot, the first one, cancelled at its first
    /// report); a reload adds and takes out some.
    twins: std::sync::Mutex<Vec<Twin>>,
    /// Set when the twins were started, with the deadline their first
    /// reports are waited for.
    started: std::sync::OnceLock<tokio::time::Instant>,
}

impl ModernEra {
    /// The second connections now.
    fn twins(&self) -> Vec<Twin> {
        self.twins.lock().expect("twins lock poisoned").clone()
    }
}

/// A second connection: its slot, the first one's source, and the token
/// cancelled at its first report.
type Twin = (usize, Arc<dyn Source>, CancellationToken);

/// What serving a request gives: its result, or why not in the one
/// currency of the gateway (made wire form at the edge, in its era).
type Outcome = Result<Payload, RouteError>;

/// The id of an unsubscribe handed to the other replicas (nobody answers it).
const UNSUBSCRIBE_ID: &str = "mcpyard-unsubscribe";

impl Gateway {
    /// Starts the gateway: each source is started (an upstream connects in
    /// the background; one that is down is retried, and left out of the
    /// lists meanwhile).
    pub async fn start(config: GatewayConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let sessions = Arc::new(Sessions::default());
        let stop = CancellationToken::new();
        let metrics = config.metrics.clone();
        let sampler = match (&metrics, config.sampler) {
            (Some(metrics), Some(sampler)) => Some(metrics.counting_sampler(sampler)),
            (_, sampler) => sampler,
        };
        let relaying = Relaying {
            client_timeout: config.client_request_timeout,
            sampler: sampler.map(|s| Arc::new(crate::source::mcp::LiveSampler::new(s))),
            audit: config.audit.clone(),
            redactor: crate::Live::new(config.guard.as_ref().and_then(|g| g.redactor())),
            apps: config.apps,
        };
        let stats = Arc::new(crate::governance::stats::CallStats::new());
        let builtin = Arc::new(Builtin::new(
            sessions.clone(),
            config.search_tools,
            stats.clone(),
            builtin::Replica {
                name: config.replica.clone(),
                state: config.state.clone(),
            },
        ));
        let configured = builtin.configured.clone();
        let mut entries = vec![(
            crate::call::GATEWAY_SOURCE.to_owned(),
            builtin::PREFIX.to_owned(),
            Default::default(),
        )];
        let mut slots = vec![Slot::new(
            crate::call::GATEWAY_SOURCE.to_owned(),
            builtin.clone(),
            Default::default(),
        )];
        for spec in config.sources {
            let index = slots.len();
            entries.push((
                spec.name().to_owned(),
                spec.effective_prefix(),
                spec.exposure.clone(),
            ));
            let name = spec.name().to_owned();
            let fingerprint = spec.fingerprint();
            let source = spec.kind.into_source(index, &sessions, &relaying, &stop);
            let mut slot = Slot::new(name, source, spec.limits);
            slot.fingerprint = fingerprint;
            slots.push(slot);
        }
        // The 2026-07-28 twins, after every source so that indexes stay.
        let mut twins = Vec::new();
        let handshake_slots = slots.len();
        for main in 0..handshake_slots {
            let index = slots.len();
            let Some(twin) = slots[main].source.second_era(index) else {
                continue;
            };
            entries.push(entries[main].clone());
            let slot = slots[main].twin(twin);
            slots.push(slot);
            twins.push((main, index));
        }
        let catalog = Arc::new(
            Catalog::new(entries, config.page_size, config.policy.clone()).with_apps(config.apps),
        );
        for &(main, twin) in &twins {
            catalog.pair_eras(main, twin);
        }
        let kept_stack = StackParts {
            audit: config.audit,
            metrics: metrics.clone(),
            outer: config.outer_layers,
            policy: config.policy,
            rate_limiter: config.rate_limiter,
            inner: config.layers,
            guard: config.guard,
            stats,
        };
        let layers = stack::build(kept_stack.clone());
        let shared_tasks = tasks::SharedTasks::new(&config.state, TaskLimits::default());
        let own_tasks = TaskStore::new(TaskLimits::default(), {
            let (sessions, shared) = (sessions.clone(), shared_tasks.clone());
            move |event: TaskEvent| {
                if let Some(session) = event.owner.as_deref().and_then(|id| sessions.get(id)) {
                    sessions.notify(&session, event.notification());
                }
                if let Some(shared) = &shared {
                    shared.changed(event);
                }
            }
        });
        if let Some(shared) = &shared_tasks {
            shared.follow(own_tasks.clone(), stop.clone());
        }
        let tasks = (own_tasks, shared_tasks);
        let router = Router::new(catalog.clone(), slots, layers, tasks, stop.clone());
        builtin.attach(&router);
        let mut first_reports = Vec::new();
        for (index, slot) in router.slots()[..handshake_slots].iter().enumerate() {
            let reported = CancellationToken::new();
            first_reports.push(reported.clone());
            slot.source.start(SourceEvents {
                index,
                catalog: catalog.clone(),
                sessions: sessions.clone(),
                reported,
            });
        }
        let modern = ModernEra {
            twins: std::sync::Mutex::new(
                twins
                    .iter()
                    .filter_map(|&(main, twin)| {
                        let first = router.source(main)?;
                        Some((twin, first, CancellationToken::new()))
                    })
                    .collect(),
            ),
            started: Default::default(),
        };
        let downstream = Downstream::new(
            sessions,
            router.clone(),
            config.client_request_timeout,
            config.session_idle_timeout,
            SessionCaps {
                total: config.max_sessions,
                per_identity: config.max_sessions_per_identity,
            },
            stop.clone(),
            config.state.clone(),
        );
        let gateway = Self {
            inner: Arc::new(Inner {
                router,
                downstream,
                first_reports,
                startup_deadline: tokio::time::Instant::now() + STARTUP_GRACE,
                started: AtomicBool::new(false),
                modern,
                stop,
                metrics,
                relaying,
                stack: kept_stack,
                reloading: tokio::sync::Mutex::new(()),
                configured,
                state: config.state,
                replica: config.replica,
            }),
        };
        gateway.serve_other_replicas();
        Ok(gateway)
    }

    /// Waits until every source has made its first report (an upstream:
    /// connected and listed, or failed), at most until the startup
    /// deadline or until `cancel` fires. Free once that has happened.
    pub async fn wait_for_startup(&self, cancel: &CancellationToken) {
        let inner = &self.inner;
        if inner.started.load(Ordering::Acquire) {
            return;
        }
        let all_reported = async {
            for reported in &inner.first_reports {
                reported.cancelled().await;
            }
        };
        tokio::select! {
            () = all_reported => inner.started.store(true, Ordering::Release),
            () = tokio::time::sleep_until(inner.startup_deadline) => inner.started.store(true, Ordering::Release),
            () = cancel.cancelled() => {}
        }
    }

    /// Starts the 2026-07-28 connections at the first request of that era
    /// (after the handshake ones made their first report, so that a server
    /// of that era alone gets none), then waits for their first reports,
    /// at most until a deadline set at their start, or until `cancel`.
    async fn wait_for_modern_era(&self, cancel: &CancellationToken) {
        let modern = &self.inner.modern;
        if modern.twins().is_empty() {
            return;
        }
        self.wait_for_startup(cancel).await;
        let mut first = false;
        let deadline = *modern.started.get_or_init(|| {
            first = true;
            tokio::time::Instant::now() + STARTUP_GRACE
        });
        if first {
            let router = &self.inner.router;
            for (index, handshake, reported) in &modern.twins() {
                if handshake.serves_both_eras() {
                    reported.cancel();
                    continue;
                }
                router.slots()[*index].source.start(SourceEvents {
                    index: *index,
                    catalog: router.catalog.clone(),
                    sessions: self.inner.downstream.sessions.clone(),
                    reported: reported.clone(),
                });
            }
        }
        let all_reported = async {
            for (_, _, reported) in &modern.twins() {
                reported.cancelled().await;
            }
        };
        tokio::select! {
            () = all_reported => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = cancel.cancelled() => {}
        }
    }

    /// The arguments of tool `name` that a 2026-07-28 client mirrors in
    /// `Mcp-Param-*` headers, (argument, header suffix), as `identity` sees
    /// the tool; none for a tool it may not use. The HTTP door checks the
    /// headers against the body with it.
    pub fn tool_param_headers(
        &self,
        identity: &crate::Identity,
        name: &str,
    ) -> Vec<(String, String)> {
        self.inner
            .router
            .catalog
            .view_for(identity, Era::Modern)
            .param_headers(name)
            .to_vec()
    }

    /// The metrics in the OpenMetrics text format, the gateway's state read
    /// now; `None` when the gateway counts nothing (see
    /// [`GatewayConfig::metrics`]).
    pub fn metrics_text(&self) -> Option<String> {
        let metrics = self.inner.metrics.as_ref()?;
        Some(metrics.render(
            &self.inner.router,
            &self.inner.downstream.sessions,
            &self.inner.replica,
            &*self.inner.state,
        ))
    }

    /// Handles one client request. `related` is the stream of this request
    /// (a POST's SSE answer), where progress and requests to the client
    /// made while serving it go.
    ///
    /// A request carrying the 2026-07-28 envelope is served in that era
    /// whatever the transport: on a one-request session of its own, its
    /// result stamped with the era's fields.
    pub async fn request(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        related: Option<Outbound>,
    ) -> Answer {
        let span = trace::request_span(method, params.as_ref());
        // Pinned where it was made: `instrument` would otherwise move the
        // whole future (most of a call's) into its wrapper.
        let serving = self.serve(session, id, method, params, related);
        tokio::pin!(serving);
        let answer = serving.instrument(span.clone()).await;
        if let Answer::Reply(Message::Error { .. }) = &answer {
            trace::record_failure(&span);
        }
        answer
    }

    async fn serve(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        related: Option<Outbound>,
    ) -> Answer {
        let request_session = match era::era_session(session, params.as_ref()) {
            Ok(s) => s,
            Err(e) => return Answer::Reply(Message::error(Some(id), e)),
        };
        let derived = !Arc::ptr_eq(&request_session, session);
        if request_session.is_stateless() {
            era::adopt_request_envelope(&request_session, params.as_ref());
            if let Some(metrics) = &self.inner.metrics {
                metrics.session_started(&request_session.protocol_version());
            }
        }
        if let Some(holder) = self
            .held_elsewhere(&request_session, method, params.as_ref())
            .await
        {
            let answer = self
                .ask_holder(&holder, &request_session, id, method, params)
                .await;
            if derived {
                request_session.end();
            }
            return answer;
        }
        // On a connection (stdio) the era's streams are the connection's own.
        let related = related.or_else(|| derived.then(|| request_session.stream()).flatten());
        // Registered on the connection's session, so that its
        // `notifications/cancelled` finds the request.
        let cancel = session.begin_request(&id);
        let mut outcome: Outcome = if request_session.is_stateless() && !era::has_method(method) {
            Err(RouteError::MethodNotFound(method.to_owned()))
        } else if method == methods::SUBSCRIPTIONS_LISTEN {
            let startup = self.wait_for_modern_era(&self.inner.stop);
            self.inner
                .downstream
                .listen(&request_session, &id, params, related, &cancel, startup)
                .await
                .map(Payload::from)
        } else if request_session.is_stateless() && round_trips::supports_input(method) {
            self.round_trip(&request_session, method, params, related, &cancel)
                .await
        } else if let Some(kind) = ListKind::listed_by(method) {
            self.list_page(&request_session, kind, params, &cancel)
                .await
        } else {
            self.dispatch(&request_session, method, params, related, cancel.clone())
                .await
        };
        session.finish_request(&id);
        if derived {
            request_session.end();
        }
        if cancel.is_cancelled() {
            return Answer::Withheld(id);
        }
        // A list page is written with its era's members already.
        let page = ListKind::listed_by(method).is_some();
        if let Some(result) = outcome.as_mut().ok().filter(|_| !page) {
            self.note_held(&request_session, method, result).await;
            if request_session.is_stateless() {
                era::stamp_stateless_result(method, result);
            } else {
                era::unstamp_for_handshake_era(result);
            }
        }
        Answer::Reply(match outcome {
            Ok(result) => Message::response(id, result),
            Err(e) if request_session.is_stateless() => {
                Message::error(Some(id), era::error_for_modern_era(e.into()))
            }
            Err(e) => Message::error(Some(id), e.into()),
        })
    }

    /// Takes note of a client's notification or response (a request goes to
    /// [`Gateway::request`]).
    pub async fn receive(&self, session: &Arc<Session>, msg: Message) {
        match msg {
            Message::Notification { method, params } => {
                self.on_notification(session, &method, params).await;
            }
            answer @ (Message::Response { .. } | Message::Error { id: Some(_), .. }) => {
                self.inner.downstream.answer(session, answer).await;
            }
            Message::Error { id: None, error } => {
                tracing::debug!(%error, "client sent an error without id");
            }
            Message::Request { id, method, .. } => {
                tracing::warn!(%id, method, "a request reached receive(); it gets no answer");
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
        let trips = &self.inner.downstream.round_trips;
        // A server's own state, passed through, goes back to that server.
        if params.get("requestState").is_some() && !pass_through::is_passed_state(&params) {
            return trips
                .resume(method, &params, &session.identity(), client_gone)
                .await;
        }
        let identity = round_trips::request_identity(method, &params, &session.identity());
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

    /// Waits, if `method` needs them, for the sources of the session's era
    /// to have been listed once.
    async fn wait_for_sources(
        &self,
        session: &Session,
        method: &str,
        params: &Value,
        cancel: &CancellationToken,
    ) {
        if needs_sources(method, params) {
            if session.is_stateless() {
                self.wait_for_modern_era(cancel).await;
            } else {
                self.wait_for_startup(cancel).await;
            }
        }
    }

    /// A page of `tools/list`, `resources/list`, `resources/templates/list`
    /// or `prompts/list`, as the session's identity and era see them.
    async fn list_page(
        &self,
        session: &Arc<Session>,
        kind: ListKind,
        params: Option<Value>,
        cancel: &CancellationToken,
    ) -> Result<Payload, RouteError> {
        let params = params.unwrap_or_else(|| json!({}));
        let method = kind.list_method();
        self.wait_for_sources(session, method, &params, cancel)
            .await;
        let catalog = &self.inner.router.catalog;
        let members = if session.is_stateless() {
            era::stateless_members(method)
        } else {
            Vec::new()
        };
        let cursor = params.get("cursor").and_then(Value::as_str);
        let supports_ui = kind != ListKind::Tools
            || !catalog.apps().enabled
            || apps::client_supports_ui(&session.negotiated().capabilities);
        let listed = |item: &ListItem| apps::listed_for(item, supports_ui);
        catalog.page(
            kind,
            cursor,
            &session.identity(),
            session.era(),
            &listed,
            &members,
        )
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
        self.wait_for_sources(session, method, &params, &cancel)
            .await;
        let router = &self.inner.router;
        let catalog = &router.catalog;
        let cursor = || params.get("cursor").and_then(Value::as_str);
        let era = session.era();
        let context = |params: &Value| {
            let progress = Progress::new(session, related.clone(), params);
            let client = ClientHandle {
                session: session.clone(),
                related: related.clone(),
            };
            router.context(client, session.identity(), cancel.clone(), progress)
        };
        match method {
            methods::INITIALIZE => {
                let result = initialize(session, &params, &catalog.apps());
                if let Some(metrics) = &self.inner.metrics {
                    metrics.session_started(&session.protocol_version());
                }
                Ok(result.into())
            }
            methods::SERVER_DISCOVER => Ok(discover(&catalog.apps()).into()),
            methods::PING => Ok(json!({}).into()),
            methods::TOOLS_CALL => Ok(self.unrouted_counted(
                methods::TOOLS_CALL,
                router.call_tool(context(&params), params).await,
            )?),
            methods::PROMPTS_GET => Ok(self.unrouted_counted(
                methods::PROMPTS_GET,
                router
                    .route(context(&params), methods::PROMPTS_GET, params)
                    .await,
            )?),
            methods::RESOURCES_READ => Ok(router
                .route(context(&params), methods::RESOURCES_READ, params)
                .await?),
            methods::COMPLETION_COMPLETE => Ok(router
                .route(context(&params), methods::COMPLETION_COMPLETE, params)
                .await?),
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                // No updates about a resource the identity may not read,
                // under any spelling of its URI.
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| RouteError::invalid_params("`uri` must be a string"))?;
                let uri = resource_uri::normalize(uri)?;
                let identity = session.identity();
                if let Some(refused) = catalog.refusal(&identity, era, ItemKind::Resource, &uri) {
                    return Err(refused);
                }
                let mut params = params;
                params["uri"] = Value::String(uri);
                let client = ClientHandle {
                    session: session.clone(),
                    related,
                };
                let downstream = &self.inner.downstream;
                if method == methods::RESOURCES_UNSUBSCRIBE && session.is_shared() {
                    // The subscription may have been made through another
                    // replica: each drops its own.
                    let unsubscribe =
                        Message::request(UNSUBSCRIBE_ID.to_owned(), method, Some(params.clone()));
                    downstream.forward(session, &unsubscribe).await;
                }
                downstream
                    .change_subscription(method, params, client, cancel)
                    .await
                    .map(Payload::from)
            }
            methods::LOGGING_SET_LEVEL => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .filter(|l| is_log_level(l))
                    .ok_or_else(|| {
                        RouteError::invalid_params(
                            "`level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        )
                    })?;
                session.update(|n| n.log_level = Some(level.to_owned()));
                self.inner.downstream.share_change(session).await;
                Ok(json!({}).into())
            }
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => {
                let call_context = || context(&params);
                self.on_task_request(
                    session,
                    method,
                    &params,
                    related.clone(),
                    call_context,
                    &cancel,
                )
                .await
                .map(Payload::from)
            }
            methods::TASKS_LIST => self.list_tasks(session, cursor()).await.map(Payload::from),
            other => Err(RouteError::MethodNotFound(other.to_owned())),
        }
    }

    /// Counts a call that named no tool or prompt its caller may use.
    fn unrouted_counted(&self, method: &'static str, outcome: Outcome) -> Outcome {
        if let (Err(RouteError::UnknownName { .. }), Some(metrics)) =
            (&outcome, &self.inner.metrics)
        {
            metrics.unrouted(method);
        }
        outcome
    }

    async fn on_notification(&self, session: &Arc<Session>, method: &str, params: Option<Value>) {
        match method {
            methods::NOTIFICATION_INITIALIZED => {
                session.update(|n| n.initialized = true);
                if session.is_shared() {
                    self.inner.downstream.share(session).await;
                }
            }
            methods::NOTIFICATION_CANCELLED => {
                let Some(id) = crate::downstream::cancelled_request(params.as_ref()) else {
                    return;
                };
                if session.is_shared() && !session.serves(&id) {
                    // The call runs on another replica.
                    let cancel = Message::notification(method, params);
                    self.inner.downstream.forward(session, &cancel).await;
                } else {
                    session.cancel_request(&id);
                }
            }
            methods::NOTIFICATION_ROOTS_LIST_CHANGED => {
                for source in self.inner.router.sources() {
                    source.notify(method, None).await;
                }
            }
            _ => tracing::debug!(method, "client notification ignored"),
        }
    }

    /// Stops every source (child processes killed and reaped), ends
    /// every session, and waits for the audit trail to hold every record.
    pub async fn shutdown(&self) {
        self.inner.downstream.end_all();
        self.inner.stop.cancel();
        self.inner.state.close();
        for slot in self.inner.router.slots() {
            slot.source.stop().await;
        }
        if let Some(trail) = &self.inner.stack.audit {
            trail.flush().await;
        }
    }
}

/// Whether a request's answer depends on the sources, and so waits for
/// their first report at start. The status tool does not: it is how one
/// sees which of them are still connecting.
fn needs_sources(method: &str, params: &Value) -> bool {
    match method {
        methods::INITIALIZE | methods::SERVER_DISCOVER | methods::PING => false,
        methods::TOOLS_CALL => {
            params.get("name").and_then(Value::as_str) != Some(builtin::STATUS_TOOL)
        }
        _ => true,
    }
}
