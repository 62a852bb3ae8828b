//! Sources: whatever offers tools, resources and prompts to the catalog and
//! serves the calls the router sends it. Every kind implements [`Source`]:
//! MCP upstreams (`mcp/`), the gateway's own tools (`builtin.rs`), and
//! sources living in other crates (local inference, OpenAPI documents).
//!
//! A source reports its lists through [`SourceEvents`] and is called with a
//! [`SourceRequest`]; it is registered with one [`SourceSpec`] in
//! [`GatewayConfig::sources`](crate::GatewayConfig::sources).

pub(crate) mod builtin;
pub(crate) mod mcp;

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use mcpyard_proto::{methods, ErrorObject, Message};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, Exposure, ListKind, SourceLists};
use crate::downstream::Sessions;
use crate::router::tasks::TaskSignal;
use crate::router::Router;
use crate::{Outbound, RouteError, Session, UpstreamSpec};

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
    async fn call(&self, request: SourceRequest) -> Result<Value, RouteError>;

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
}

/// How a source is registered: the source, the prefix of its names and the
/// limits the router applies to its calls.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub(crate) kind: SourceKind,
    /// `None` means `<name>__`, `Some("")` no prefix.
    pub prefix: Option<String>,
    pub limits: CallLimits,
    /// What of its lists clients see, and under which names.
    pub exposure: Exposure,
}

#[derive(Debug, Clone)]
pub(crate) enum SourceKind {
    /// An upstream MCP server, built and supervised by the gateway.
    Mcp(Box<UpstreamSpec>),
    Other(Arc<dyn Source>),
}

impl SourceSpec {
    /// An upstream MCP server; its limits come from its spec.
    pub fn mcp(spec: UpstreamSpec) -> Self {
        let limits = CallLimits {
            timeout: Some(spec.timeout),
            max_in_flight: spec.max_in_flight,
            ..CallLimits::default()
        };
        Self {
            prefix: spec.prefix.clone(),
            kind: SourceKind::Mcp(Box::new(spec)),
            limits,
            exposure: Exposure::default(),
        }
    }

    /// Any other source, with the default limits and prefix.
    pub fn new(source: Arc<dyn Source>) -> Self {
        Self {
            kind: SourceKind::Other(source),
            prefix: None,
            limits: CallLimits::default(),
            exposure: Exposure::default(),
        }
    }

    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    pub fn with_limits(mut self, limits: CallLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The upstream MCP server this registers, if it is one.
    pub fn upstream(&self) -> Option<&UpstreamSpec> {
        match &self.kind {
            SourceKind::Mcp(spec) => Some(spec),
            SourceKind::Other(_) => None,
        }
    }

    pub fn name(&self) -> &str {
        match &self.kind {
            SourceKind::Mcp(spec) => &spec.name,
            SourceKind::Other(source) => source.name(),
        }
    }

    /// The prefix put before this source's tool and prompt names.
    pub fn effective_prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}__", self.name()),
        }
    }
}

/// What the router allows one source's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallLimits {
    /// A call that runs longer is cancelled (`None`: no limit; the client
    /// can still cancel).
    pub timeout: Option<Duration>,
    /// Calls running at once at most; the next waits for one to end.
    pub max_in_flight: usize,
    /// How long a call over `max_in_flight` waits before it fails.
    pub queue_timeout: Duration,
    /// How large its arguments and results may be.
    pub sizes: crate::SizeLimits,
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            timeout: None,
            max_in_flight: 64,
            queue_timeout: Duration::from_secs(30),
            sizes: crate::SizeLimits::default(),
        }
    }
}

/// How a source tells the catalog what it offers. Reports replace the
/// previous one; clients are told of the lists that changed.
#[derive(Debug, Clone)]
pub struct SourceEvents {
    pub(crate) index: usize,
    pub(crate) catalog: Arc<Catalog>,
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

/// The identity of the client a call is made for, as authentication
/// established it; exposure, policy, limits and the audit depend on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The API key's name, the token's subject, or the local user's name;
    /// empty for [`IdentityKind::Anonymous`].
    pub name: String,
    pub kind: IdentityKind,
    /// Groups the identity belongs to (from the key's configuration or the
    /// token's groups claim). [`EVERY_GROUP`] stands for all of them.
    pub groups: Vec<String>,
    /// OAuth scopes the token carries (empty for API keys).
    pub scopes: Vec<String>,
}

/// The group that stands for every group: the `MCPYARD_API_KEY` shorthand
/// and the local user of the stdio door are in it.
pub const EVERY_GROUP: &str = "*";

/// How an [`Identity`] was established.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IdentityKind {
    /// No authentication configured.
    #[default]
    Anonymous,
    /// A configured API key.
    ApiKey,
    /// An OAuth access token.
    Token,
    /// The stdio front door: the user who started the process.
    Local,
}

impl IdentityKind {
    /// The kind's name in status output and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Anonymous => "anonymous",
            IdentityKind::ApiKey => "api_key",
            IdentityKind::Token => "token",
            IdentityKind::Local => "local",
        }
    }
}

impl Identity {
    /// The identity of a client when no authentication is configured.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// A named identity of the given kind and groups, without scopes.
    pub fn named(kind: IdentityKind, name: impl Into<String>, groups: Vec<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            groups,
            scopes: Vec::new(),
        }
    }

    /// Whether the identity is in `group`: always when a configured key or
    /// the local user is in [`EVERY_GROUP`]. A token's groups are what its
    /// issuer wrote, so a `*` among them is only a group of that name.
    pub fn in_group(&self, group: &str) -> bool {
        let every = self.kind != IdentityKind::Token;
        self.groups
            .iter()
            .any(|g| g == group || (every && g == EVERY_GROUP))
    }

    /// `kind:name`, distinct across kinds of credential: what is owned and
    /// counted per identity is keyed by it.
    pub fn qualified_name(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.name)
    }
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
    pub(crate) fn era(&self) -> crate::catalog::Era {
        crate::catalog::Era::of(&self.client.session)
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
            router: RouterHandle {
                router: Weak::new(),
            },
            task: None,
        }
    }
}

impl CallContext {
    /// The tools of the catalogue (exposed names) this call's identity may
    /// use, as its `tools/list` shows them.
    pub fn tools(&self) -> Vec<Value> {
        match self.router.router.upgrade() {
            Some(router) => router.listed_tools(&self.identity, self.era()),
            None => Vec::new(),
        }
    }

    /// Calls a tool of the catalogue by its exposed name, as the client
    /// that made this call and through the same layers; the result is a
    /// `CallToolResult`. Cancelling this call cancels the inner one.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ErrorObject> {
        let Some(router) = self.router.router.upgrade() else {
            return Err(ErrorObject::internal("the gateway is shutting down"));
        };
        tracing::info!(tool = name, "inner tool call");
        let context = router.context(
            self.client.clone(),
            self.identity.clone(),
            self.cancel.child_token(),
            Progress::none(),
        );
        router
            .call_tool(context, json!({"name": name, "arguments": arguments}))
            .await
            .map_err(ErrorObject::from)
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
    ) -> Result<Value, ErrorObject> {
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
    pub(crate) router: Weak<Router>,
}

/// Answers an upstream's `sampling/createMessage` with a local model, for
/// the upstreams whose [`UpstreamSampling`](crate::UpstreamSampling) allows
/// it.
#[async_trait]
pub trait Sampler: Send + Sync + std::fmt::Debug + 'static {
    /// Serves a request the upstream's [`SamplingPolicy`](crate::SamplingPolicy)
    /// admitted: with its [`model`](crate::SamplingRequest::model) when set,
    /// within the `maxTokens` of its params (already capped). Returns the
    /// `CreateMessageResult` and what it used.
    async fn create_message(
        &self,
        request: &crate::SamplingRequest,
    ) -> Result<(Value, SamplingUsage), ErrorObject>;
}

/// What a locally answered sampling request used, for the audit log.
#[derive(Debug, Clone, Default)]
pub struct SamplingUsage {
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}
