//! Sources: whatever offers tools, resources and prompts to the catalog and
//! serves the calls the router sends it. Every kind implements [`Source`]:
//! MCP upstreams (`mcp/`), the gateway's own tools (`builtin/`), and
//! sources living in other crates (local inference, OpenAPI documents).
//!
//! A source reports its lists through [`SourceEvents`] and is called with a
//! [`SourceRequest`]; it is registered with one [`SourceSpec`] in
//! [`GatewayConfig::sources`](crate::GatewayConfig::sources).

pub(crate) mod builtin;
pub(crate) mod mcp;
mod spec;

pub(crate) use mcp::Relaying;
pub use mcp::{UpstreamSampling, UpstreamSpec};
pub use spec::{settings_hash, SourceSpec};

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_proto::{methods, ErrorObject, Message, Payload};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::call::{Era, Identity, ListKind, SourceLists};
use crate::downstream::Sessions;
use crate::tasks::TaskSignal;
use crate::{Outbound, RouteError, Session};

/// One kind of source. Implementations serve the requests the router sends
/// them; timeouts, caps on calls in flight, tracing and (later) policy are
/// the router's layers, not theirs.
#[async_trait]
pub trait Source: Send + Sync + std::fmt::Debug + 'static {
    /// The source's name, unique in the gateway; its default prefix is `<name>__`.
    fn name(&self) -> &str;

    /// Called once when the gateway starts: the source reports its lists
    /// now or later through `events`. The gateway's start-up hold waits for
    /// its first report (bounded).
    fn start(&self, events: SourceEvents);

    /// Serves one request: `tools/call`, `prompts/get`, `resources/read` or
    /// `completion/complete`, with the source's own names in the params.
    /// Failures a model can fix by changing the call are `isError` results.
    /// The result may be the JSON text the source was given (an upstream's
    /// answer), passed on unparsed unless a layer needs to look inside.
    async fn call(&self, request: SourceRequest) -> Result<Payload, RouteError>;

    /// A JSON summary for the status tool: must include `name` and `healthy`.
    async fn status(&self) -> Value;

    /// Whether the source ends a call itself once its context's token is
    /// cancelled or its deadline passes (an MCP client tells the upstream).
    /// Otherwise the router stops the call, and cancels its token, then.
    fn stops_itself(&self) -> bool {
        false
    }

    /// Stops the source and waits until what it holds (child processes,
    /// connections) is released.
    async fn stop(&self) {}

    // What follows is optional: MCP upstreams have all of it, and any
    // other kind of source may offer it the same way.

    /// Whether the source offers `capability`, named as a JSON pointer into
    /// MCP's capabilities object (`/resources/subscribe`,
    /// `/tasks/requests/tools/call`): the gateway asks a source only for
    /// what it offers.
    fn offers(&self, _capability: &str) -> bool {
        false
    }

    /// Serves a request that is not a call of one of its items: a client's
    /// `resources/subscribe` or `unsubscribe`, or `tasks/get`,
    /// `tasks/update`, `tasks/result`, `tasks/cancel` of a task the source
    /// runs itself (with the client's `context`); `tasks/list` or an
    /// unsubscribe of the gateway's own (without).
    async fn request(
        &self,
        method: &str,
        _params: Value,
        _context: Option<&CallContext>,
    ) -> Result<Value, RouteError> {
        Err(RouteError::Protocol(ErrorObject::method_not_found(method)))
    }

    /// Tells the source what a client said to every source
    /// (`notifications/roots/list_changed`).
    async fn notify(&self, _method: &str, _params: Option<Value>) {}

    /// Why calls of its items fail while the source is down.
    fn unavailable(&self) -> RouteError {
        RouteError::Unavailable {
            server: self.name().to_owned(),
            reason: String::new(),
        }
    }

    /// Whether it is connected and how often it was restarted, for the
    /// metrics; `None` for a source without a connection to watch.
    fn health(&self) -> Option<SourceHealth> {
        None
    }

    /// Whether the model usage its results report is the gateway's own to
    /// count (a local model's); a server's usage is its business.
    fn reports_own_usage(&self) -> bool {
        true
    }

    /// Whether the call's trace context goes along with the request (an
    /// MCP request's `_meta.traceparent`).
    fn carries_trace(&self) -> bool {
        false
    }

    /// A second instance of the source, at catalogue `index`, serving the
    /// clients of the 2026-07-28 era (a server may offer them something
    /// else than handshake clients); started when the first such client
    /// comes. `None`: one instance serves both eras.
    fn second_era(&self, _index: usize) -> Option<Arc<dyn Source>> {
        None
    }

    /// Whether this is such a second instance (shown in its first's status).
    fn is_second_era(&self) -> bool {
        false
    }

    /// Whether this instance already serves 2026-07-28 clients as well as
    /// a second would (a server of that era alone): the second is not started.
    fn serves_both_eras(&self) -> bool {
        false
    }

    /// Whether this holds the place of a source the configuration no
    /// longer has (see [`Removed`]).
    fn is_removed(&self) -> bool {
        false
    }
}

/// What takes the place of a source a reload removed: its catalogue index
/// stays taken, so every other index stays valid, and anything that still
/// reaches it (a task it ran, a page a client fetched before) fails naming
/// it.
#[derive(Debug)]
pub(crate) struct Removed {
    name: String,
}

impl Removed {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
        }
    }
}

#[async_trait]
impl Source for Removed {
    fn name(&self) -> &str {
        &self.name
    }

    fn start(&self, _events: SourceEvents) {}

    async fn call(&self, _request: SourceRequest) -> Result<Payload, RouteError> {
        Err(self.unavailable())
    }

    async fn status(&self) -> Value {
        json!({ "name": self.name, "healthy": false, "removed": true })
    }

    fn unavailable(&self) -> RouteError {
        RouteError::Unavailable {
            server: self.name.clone(),
            reason: ": it was removed from the configuration".to_owned(),
        }
    }

    fn is_removed(&self) -> bool {
        true
    }
}

/// A source's connection health, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceHealth {
    pub up: bool,
    pub restarts: u64,
}

/// How a source tells the catalog what it offers. Reports replace the
/// previous one; clients are told of the lists that changed.
#[derive(Debug, Clone)]
pub struct SourceEvents {
    pub(crate) index: usize,
    pub(crate) catalog: Arc<dyn ListsPort>,
    pub(crate) sessions: Arc<Sessions>,
    /// Cancelled at the first report: the start-up hold ends for this source.
    pub(crate) reported: CancellationToken,
}

impl SourceEvents {
    /// The source is up and offers these lists.
    pub fn publish(&self, lists: SourceLists) {
        self.set(Some(lists));
    }

    /// The source is down: its items leave the lists, and calls to them
    /// fail naming it.
    pub fn down(&self) {
        self.set(None);
    }

    /// Resource `uri` (the source's own) changed: its subscribers are told
    /// with `notifications/resources/updated`.
    pub fn resource_updated(&self, uri: &str) {
        let msg = Message::notification(
            methods::NOTIFICATION_RESOURCES_UPDATED,
            Some(json!({ "uri": uri })),
        );
        self.sessions.notify_subscribers(self.index, uri, &msg);
    }

    fn set(&self, lists: Option<SourceLists>) {
        for kind in self.catalog.set_lists(self.index, lists) {
            if kind == ListKind::ResourceTemplates {
                continue; // announced with resources
            }
            self.sessions
                .broadcast(&Message::notification(kind.changed_notification(), None));
        }
        self.reported.cancel();
    }
}

/// Where sources' lists go: the catalogue.
pub(crate) trait ListsPort: Send + Sync + std::fmt::Debug {
    /// Replaces source `index`'s lists (`None`: it is down); returns the
    /// kinds of list that changed.
    fn set_lists(&self, index: usize, lists: Option<SourceLists>) -> Vec<ListKind>;

    /// Whether `identity`, in `era`, may use anything of source `index`.
    fn serves(&self, index: usize, identity: &Identity, era: Era) -> bool;
}

/// One request routed to a source.
#[derive(Debug)]
pub struct SourceRequest {
    /// `tools/call`, `prompts/get`, `resources/read` or `completion/complete`.
    pub method: &'static str,
    /// The request's params, with the source's own tool or prompt name.
    pub params: Value,
    pub context: CallContext,
}

impl SourceRequest {
    /// The tool or prompt name (the source's own, unprefixed).
    pub fn name(&self) -> Option<&str> {
        self.params.get("name").and_then(Value::as_str)
    }

    /// Takes the call's arguments (`null` and absent mean none).
    pub fn take_arguments(&mut self) -> Value {
        match self.params.get_mut("arguments").map(Value::take) {
            Some(Value::Null) | None => json!({}),
            Some(a) => a,
        }
    }
}

/// What a call can use besides its params.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Cancelled when the client cancels the call, the call times out or
    /// the session ends.
    pub cancel: CancellationToken,
    pub progress: Progress,
    /// The client that made the call, to ask it for sampling, elicitation
    /// or roots.
    pub client: ClientHandle,
    pub identity: Identity,
    /// When the call must be over (set by the router's timeout layer).
    pub deadline: Option<tokio::time::Instant>,
    /// The router, for calls of other tools as the same client (the agent).
    pub router: RouterHandle,
    /// The gateway-run task the call serves, if any.
    pub(crate) task: Option<TaskSignal>,
}

impl CallContext {
    /// The protocol era of the client the call is made for.
    pub(crate) fn era(&self) -> crate::call::Era {
        self.client.session.era()
    }

    /// A context for work the gateway does on its own behalf (answering an
    /// upstream's sampling request): no progress, no catalogue access.
    pub fn detached(cancel: CancellationToken) -> Self {
        let client = ClientHandle {
            session: Session::stateless(mcpyard_proto::LATEST_STATEFUL, json!({})),
            related: None,
        };
        Self {
            cancel,
            progress: Progress::none(),
            client,
            identity: Identity::anonymous(),
            deadline: None,
            router: RouterHandle { calls: None },
            task: None,
        }
    }
}

impl CallContext {
    /// The tools of the catalogue (exposed names) this call's identity may
    /// use, as its `tools/list` shows them.
    pub fn tools(&self) -> Vec<Value> {
        match self.router.get() {
            Some(calls) => calls.listed_tools(&self.identity, self.era()),
            None => Vec::new(),
        }
    }

    /// Calls a tool of the catalogue by its exposed name, as the client
    /// that made this call and through the same layers; the result is a
    /// `CallToolResult`. Cancelling this call cancels the inner one.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, RouteError> {
        let Some(calls) = self.router.get() else {
            return Err(RouteError::internal("the gateway is shutting down"));
        };
        tracing::info!(tool = name, "inner tool call");
        calls
            .call_as(self, json!({"name": name, "arguments": arguments}))
            .await
    }
}

/// The client a call was made by, and the stream of its request.
#[derive(Debug, Clone)]
pub struct ClientHandle {
    pub(crate) session: Arc<Session>,
    pub(crate) related: Option<Outbound>,
}

impl ClientHandle {
    /// Sends a request to the client (sampling, elicitation, roots) and
    /// waits for its answer: on the request's stream, or, in protocol
    /// 2026-07-28, as an `input_required` round.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value, RouteError> {
        self.session
            .request_client(method, params, self.related.as_ref(), timeout)
            .await
    }

    /// Whether the client declared a capability (`sampling`, `roots`...).
    pub fn has_capability(&self, name: &str) -> bool {
        self.session.has_capability(name)
    }
}

/// Progress notifications for the call, to the client that made it; a
/// no-op when the client sent no progress token.
#[derive(Debug, Clone)]
pub struct Progress {
    target: Option<(Arc<Session>, Option<Outbound>, Value)>,
    /// The guardrails' redaction, applied to every report's message.
    redactor: Option<Arc<crate::governance::guard::Redactor>>,
}

impl Progress {
    pub(crate) fn new(session: &Arc<Session>, related: Option<Outbound>, params: &Value) -> Self {
        let token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        Self {
            target: token.map(|t| (session.clone(), related, t)),
            redactor: None,
        }
    }

    /// Reports from now on are redacted by `redactor`.
    pub(crate) fn redact_with(&mut self, redactor: &Arc<crate::governance::guard::Redactor>) {
        if self.target.is_some() {
            self.redactor = Some(redactor.clone());
        }
    }

    /// A reporter that reports nothing (tests, inner calls).
    pub fn none() -> Self {
        Self {
            target: None,
            redactor: None,
        }
    }

    /// Whether the client asked for progress.
    pub fn is_active(&self) -> bool {
        self.target.is_some()
    }

    /// Reports go to the session's stream instead of the request's (a task
    /// outlives the request that created it).
    pub(crate) fn report_on_session_stream(&mut self) {
        if let Some((_, related, _)) = &mut self.target {
            *related = None;
        }
    }

    /// The client's progress token, read once when the call came in.
    pub(crate) fn token(&self) -> Option<&Value> {
        self.target.as_ref().map(|(_, _, token)| token)
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
        let mut params = Some(params);
        if let Some(redactor) = &self.redactor {
            redactor.redact_message(methods::NOTIFICATION_PROGRESS, &mut params);
        }
        // Never waits: a client that stops reading must not hold up the
        // work (a model's stream) behind the progress.
        session.notify(
            Message::notification(methods::NOTIFICATION_PROGRESS, params),
            related.as_ref(),
        );
    }
}

/// A handle on the router, held by every call's context (see
/// [`CallContext::call_tool`]).
#[derive(Debug, Clone)]
pub struct RouterHandle {
    calls: Option<Weak<dyn InnerCalls>>,
}

impl RouterHandle {
    pub(crate) fn new(calls: Weak<dyn InnerCalls>) -> Self {
        Self { calls: Some(calls) }
    }

    fn get(&self) -> Option<Arc<dyn InnerCalls>> {
        self.calls.as_ref()?.upgrade()
    }
}

/// What a call may ask of the catalogue as its own client: the tools it
/// may use, and calls of them through every layer (the router has it).
pub(crate) trait InnerCalls: Send + Sync + std::fmt::Debug {
    fn listed_tools(&self, identity: &Identity, era: Era) -> Vec<Value>;

    /// Calls `params` (`{name, arguments}`) as `caller`'s client, its
    /// cancellation reaching the inner call.
    fn call_as<'a>(
        &'a self,
        caller: &CallContext,
        params: Value,
    ) -> futures::future::BoxFuture<'a, Result<Value, RouteError>>;
}
