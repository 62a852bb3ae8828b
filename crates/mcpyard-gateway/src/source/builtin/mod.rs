//! The gateway's own tools as a source: `status` (every source and its
//! health), `docs` (the bundled reference pages), and while some tool is
//! hidden, the search tools (`search.rs`).

mod configured;
mod reply;
mod search;

pub use search::spread_wrapped_arguments;

use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use mcpyard_proto::Payload;
use serde_json::{json, Value};

use crate::call::GATEWAY_SOURCE;
use crate::call::{Era, ListKind, SourceLists};
use crate::call::{Identity, IdentityKind};
use crate::downstream::Sessions;
use crate::governance::stats::{self, CallStats};
use crate::router::Router;
use crate::source::{Source, SourceEvents, SourceRequest};
use crate::RouteError;
pub(crate) use configured::Configured;
pub(crate) use reply::PREFIX;
use reply::{result, tool_error};

/// The status tool's listed name: answered even while upstreams still start.
pub(crate) const STATUS_TOOL: &str = "mcpyard__status";

/// The bundled reference pages: (name, text), the files of the top-level
/// `docs/` folder, so the pages served and the pages in the repository
/// are the same.
const PAGES: &[(&str, &str)] = &[
    // what mcpyard is, the pages, what works
    ("overview", include_str!("../../../../../docs/overview.md")),
    // the file formats, the top-level keys, `${VAR}` expansion, `[limits]`
    (
        "configuration",
        include_str!("../../../../../docs/configuration.md"),
    ),
    // connecting clients over HTTP and stdio; optional sessions
    ("clients", include_str!("../../../../../docs/clients.md")),
    // `[servers.NAME]` and OAuth toward upstream servers
    (
        "upstreams",
        include_str!("../../../../../docs/upstreams.md"),
    ),
    // exposure and the tool search
    ("search", include_str!("../../../../../docs/search.md")),
    // local models as tools, `[inference]`, sampling by a local model
    (
        "local-models",
        include_str!("../../../../../docs/local-models.md"),
    ),
    // HTTP APIs as tools, `[apis.NAME]`
    ("openapi", include_str!("../../../../../docs/openapi.md")),
    // identities: `[auth]` and `[http]`
    ("auth", include_str!("../../../../../docs/auth.md")),
    // policy, rate limits, guardrails, size limits, the audit
    (
        "governance",
        include_str!("../../../../../docs/governance.md"),
    ),
    // MCP Apps, `[apps]`
    ("apps", include_str!("../../../../../docs/apps.md")),
    // front doors, protocol eras and how the gateway behaves
    ("protocol", include_str!("../../../../../docs/protocol.md")),
    // install, command line, reloads, status page, metrics and traces
    (
        "operations",
        include_str!("../../../../../docs/operations.md"),
    ),
    // several replicas behind a load balancer, state in Redis
    ("team", include_str!("../../../../../docs/team.md")),
    // architecture, layout and tests
    (
        "development",
        include_str!("../../../../../docs/development.md"),
    ),
    // what to check when something is wrong
    (
        "troubleshooting",
        include_str!("../../../../../docs/troubleshooting.md"),
    ),
];

/// The gateway's own tools.
#[derive(Debug)]
pub(crate) struct Builtin {
    /// What the status tool reports on; set once the router exists.
    router: OnceLock<Weak<Router>>,
    sessions: Arc<Sessions>,
    /// Whether the search tools are offered (the gateway-wide setting).
    search_tools: bool,
    /// The configuration served and its reloads.
    pub(crate) configured: Arc<Configured>,
    /// The gateway's call statistics, for the status.
    stats: Arc<CallStats>,
    /// This replica, and where it shares state, for the status.
    replica: Replica,
}

/// Which replica this is and where it shares state with the others.
#[derive(Debug)]
pub(crate) struct Replica {
    pub(crate) name: String,
    pub(crate) state: Arc<dyn crate::state::StateBackend>,
}

impl Replica {
    /// The replica's name and its state backend's health, for the status.
    async fn status(&self) -> Value {
        let reached = self.state.ping().await;
        json!({
            "name": self.name,
            "state": {
                "backend": self.state.kind(),
                "reachable": reached.is_ok(),
                "error": reached.err().map(|e| e.to_string()),
            },
        })
    }
}

impl Builtin {
    pub(crate) fn new(
        sessions: Arc<Sessions>,
        search_tools: bool,
        stats: Arc<CallStats>,
        replica: Replica,
    ) -> Self {
        Self {
            router: OnceLock::new(),
            sessions,
            search_tools,
            configured: Arc::default(),
            stats,
            replica,
        }
    }

    fn router(&self) -> Option<Arc<Router>> {
        self.router.get().and_then(Weak::upgrade)
    }

    /// `call_tool`: a hidden tool, its arguments checked first, then
    /// routed as a direct call with this call's context (progress token,
    /// cancellation, task, identity).
    async fn call_hidden(
        &self,
        request: SourceRequest,
        arguments: Value,
    ) -> Result<Payload, RouteError> {
        let Some(router) = self.router() else {
            return Ok(tool_error("the gateway is shutting down").into());
        };
        // `tool_name` is what LocalAiMCP's `execute_additional_tool` takes.
        let name = match (arguments.get("name"), arguments.get("tool_name")) {
            (Some(Value::String(name)), None) | (None, Some(Value::String(name))) => name.as_str(),
            (Some(_), Some(_)) => {
                return Ok(
                    tool_error("give the tool's name once: `name` or `tool_name`, not both").into(),
                )
            }
            _ => {
                return Ok(tool_error(
                    "`name` is required: the tool's full name, as mcpyard__search_tools gives it",
                )
                .into())
            }
        };
        let mut tool_arguments = match arguments.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(a @ Value::Object(_)) => a.clone(),
            Some(_) => return Ok(tool_error("`arguments` must be an object").into()),
        };
        let view = router
            .catalog
            .view_for(&request.context.identity, request.context.era());
        let Some(tool) = view.hidden().get(name) else {
            let refusal = search::refusal(&view, name);
            drop(view);
            // A tool the policy keeps from this identity (hidden, or listed
            // to others) still goes to the router, so that its layers
            // (audit, metrics) record the refusal with its rule; the caller
            // is answered as for an unknown name.
            let identity = &request.context.identity;
            if router
                .catalog
                .refused_route(
                    identity,
                    request.context.era(),
                    crate::governance::ItemKind::Tool,
                    name,
                )
                .is_some()
            {
                let params = json!({"name": name, "arguments": tool_arguments});
                match router.call_tool(request.context, params).await {
                    Err(RouteError::Denied { .. }) => {}
                    other => return other,
                }
            }
            return Ok(refusal.into());
        };
        if let Some(schema) = tool.tool.field("inputSchema") {
            if let Some(spread) =
                search::spread_wrapped_arguments(&tool_arguments, search::REQUEST_WRAPPER, &schema)
            {
                tool_arguments = spread;
            }
        }
        if let Some(refused) = search::invalid_arguments(tool, &tool_arguments) {
            return Ok(refused.into());
        }
        drop(view);
        let mut params = json!({"name": name, "arguments": tool_arguments});
        if let Some(meta) = request.params.get("_meta") {
            params["_meta"] = meta.clone();
        }
        router.call_tool(request.context, params).await
    }

    pub(crate) fn attach(&self, router: &Arc<Router>) {
        let _ = self.router.set(Arc::downgrade(router));
    }

    /// The status as `identity` (of `era`) may see it: per source, the
    /// tools the policy keeps from it are counted as denied.
    async fn gateway_status(&self, identity: &Identity, era: Era) -> Value {
        let Some(router) = self.router() else {
            return tool_error("the gateway is shutting down");
        };
        let view = router.catalog.view();
        let denied = router.catalog.policy().is_some().then(|| {
            (
                router.catalog.era_view(era),
                router.catalog.view_for(identity, era),
            )
        });
        let counts = json!({
            "tools": view.len(ListKind::Tools),
            "hiddenTools": view.hidden().len(),
            "resources": view.len(ListKind::Resources),
            "resourceTemplates": view.len(ListKind::ResourceTemplates),
            "prompts": view.len(ListKind::Prompts),
        });
        let mut sources = Vec::new();
        for (index, slot) in router.slots().iter().enumerate() {
            // A second connection is shown in its server's status.
            if slot.name == GATEWAY_SOURCE
                || slot.source.is_second_era()
                || slot.source.is_removed()
            {
                continue;
            }
            let mut status = slot.source.status().await;
            let exposure = view.exposure(index);
            status["tools_listed"] = json!(exposure.listed);
            status["tools_hidden"] = json!(exposure.hidden);
            if let Some((all, theirs)) = &denied {
                let serving = router.catalog.serving(index, era);
                status["tools_denied"] = json!(all
                    .tools_of(serving)
                    .saturating_sub(theirs.tools_of(serving)));
            }
            if !exposure.unmatched.is_empty() {
                status["expose_unmatched"] = json!(exposure.unmatched);
            }
            sources.push(status);
        }
        let mut status = status(sources, counts, &view.collisions, self.sessions.len());
        if let Some(config) = self.configured.status() {
            if let Some(text) = status["content"][0]["text"].as_str() {
                let text = format!("{text}\n{}", configured::line(&config));
                status["content"][0]["text"] = Value::String(text);
            }
            status["structuredContent"]["config"] = config;
        }
        let replica = self.replica.status().await;
        if let Some(text) = status["content"][0]["text"].as_str() {
            let state = &replica["state"];
            let health = if state["reachable"] == true {
                "reachable".to_owned()
            } else {
                format!("UNREACHABLE ({})", state["error"].as_str().unwrap_or("?"))
            };
            let text = format!(
                "{text}\nreplica: {}, state backend: {} ({health})",
                replica["name"].as_str().unwrap_or(""),
                state["backend"].as_str().unwrap_or("")
            );
            status["content"][0]["text"] = Value::String(text);
        }
        status["structuredContent"]["replica"] = replica;
        status
    }
}

impl Builtin {
    /// Adds the call statistics, of the tools `identity` may call only:
    /// per tool over the window, and the audit's recent calls.
    fn with_calls(&self, mut status: Value, identity: &Identity, era: Era) -> Value {
        let Some(router) = self.router() else {
            return status;
        };
        let view = router.catalog.view_for(identity, era);
        let shown = |tool: &str| view.tool(tool).is_some() || view.hidden().get(tool).is_some();
        // The untracked tools' calls together, only where nothing is kept
        // from anyone (they may be of any tool).
        let other = router.catalog.policy().is_none();
        let calls = &self.stats;
        let figures = calls.figures(shown, other);
        let recent = calls.audit_on().then(|| calls.recent(|c| shown(&c.tool)));
        let (count, failed) = figures
            .iter()
            .fold((0, 0), |(n, e), f| (n + f.calls, e + f.errors));
        if let Some(Value::String(text)) = status.pointer_mut("/content/0/text") {
            text.push_str(&format!(
                "\ncalls, last {} min: {count} ({failed} failed) of {} tool(s)",
                stats::WINDOW.as_secs() / 60,
                figures.len()
            ));
        }
        if let Some(structured) = status.get_mut("structuredContent") {
            structured["calls"] = stats::section(&figures, recent.as_deref());
        }
        status
    }
}

#[async_trait]
impl Source for Builtin {
    fn name(&self) -> &str {
        GATEWAY_SOURCE
    }

    fn start(&self, events: SourceEvents) {
        let mut tools = tools();
        let mut lists = SourceLists::default();
        if self.search_tools {
            tools.extend(search::tools());
            lists.listed_when_hiding = search::NAMES.map(str::to_owned).to_vec();
        }
        lists.set(ListKind::Tools, tools);
        events.publish(lists);
    }

    async fn call(&self, mut request: SourceRequest) -> Result<Payload, RouteError> {
        let arguments = request.take_arguments();
        let router = self.router();
        let page_size = router.as_ref().map_or(1, |r| r.catalog.page_size());
        let hidden = || {
            router
                .as_ref()
                .map(|r| {
                    r.catalog
                        .view_for(&request.context.identity, request.context.era())
                        .hidden()
                        .clone()
                })
                .unwrap_or_default()
        };
        match request.name() {
            Some("status") => {
                let context = &request.context;
                let status = self.gateway_status(&context.identity, context.era()).await;
                let status = self.with_calls(status, &context.identity, context.era());
                Ok(with_caller(status, &context.identity).into())
            }
            Some("docs") => Ok(docs(&arguments).into()),
            Some(search::LIST_TOOLS) if self.search_tools => {
                Ok(search::list_tools(&hidden(), page_size, &arguments).into())
            }
            Some(search::SEARCH_TOOLS) if self.search_tools => {
                Ok(search::search_tools(&hidden(), &arguments).into())
            }
            Some(search::CALL_TOOL) if self.search_tools => {
                self.call_hidden(request, arguments).await
            }
            other => Err(RouteError::UnknownName {
                kind: "tool",
                name: other.unwrap_or_default().to_owned(),
            }),
        }
    }

    async fn status(&self) -> Value {
        json!({"name": GATEWAY_SOURCE, "kind": "builtin", "healthy": true})
    }
}

/// The built-in tools as `tools/list` items (unprefixed names).
pub(crate) fn tools() -> Vec<Value> {
    vec![
        json!({
            "name": "status",
            "title": "Gateway status",
            "description": "Every source mcpyard aggregates (upstream MCP servers, local models, HTTP APIs), whether it is healthy (an API: whether its base URL answers), its last error and restart count, how many tools, resources and prompts the catalog holds, and the calls of the last 15 minutes per tool you may call (count, errors, p50/p95 latency) with, while the audit trail is on, the most recent ones.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
        json!({
            "name": "docs",
            "title": "mcpyard documentation",
            "description": "Returns one of mcpyard's reference pages. Call with no `page` to list the pages.",
            "inputSchema": {
                "type": "object",
                "properties": {"page": {"type": "string", "description": "Page name, e.g. `configuration`."}},
                "additionalProperties": false,
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
    ]
}

/// Adds who is asking to a `status` result, so a client can see which
/// identity the gateway took it for.
fn with_caller(mut status: Value, identity: &Identity) -> Value {
    let line = match identity.kind {
        IdentityKind::Anonymous => "caller: anonymous (no authentication)".to_owned(),
        kind => format!(
            "caller: {} ({}), groups [{}], scopes [{}]",
            identity.name,
            kind.as_str(),
            identity.groups.join(", "),
            identity.scopes.join(" ")
        ),
    };
    if let Some(Value::String(text)) = status.pointer_mut("/content/0/text") {
        text.push('\n');
        text.push_str(&line);
    }
    if let Some(structured) = status.get_mut("structuredContent") {
        structured["caller"] = json!({
            "name": identity.name,
            "kind": identity.kind.as_str(),
            "groups": identity.groups,
            "scopes": identity.scopes,
        });
    }
    status
}

/// The `docs` tool.
pub(crate) fn docs(arguments: &Value) -> Value {
    let names: Vec<&str> = PAGES.iter().map(|(n, _)| *n).collect();
    match arguments.get("page") {
        None | Some(Value::Null) => result(
            format!(
                "mcpyard reference pages: {}. Call again with `page` set to one of them.",
                names.join(", ")
            ),
            Some(json!({"pages": names})),
        ),
        Some(Value::String(page)) => match PAGES.iter().find(|(n, _)| n == page) {
            Some((_, text)) => result((*text).to_owned(), None),
            None => tool_error(format!(
                "no page named `{page}`; the pages are: {}",
                names.join(", ")
            )),
        },
        Some(_) => tool_error("`page` must be a string"),
    }
}

/// The `status` tool, from each upstream's status summary.
pub(crate) fn status(
    sources: Vec<Value>,
    counts: Value,
    collisions: &[String],
    sessions: usize,
) -> Value {
    let mut lines = vec![format!(
        "mcpyard {}: {} source(s), {} client session(s)",
        env!("CARGO_PKG_VERSION"),
        sources.len(),
        sessions
    )];
    for s in &sources {
        let mut line = format!(
            "- {} [{}] {}",
            s["name"].as_str().unwrap_or("?"),
            s["state"].as_str().unwrap_or("?"),
            s["transport"].as_str().unwrap_or("")
        );
        if let Some(e) = s["error"].as_str() {
            line.push_str(&format!(" (error: {e})"));
        }
        if let (Some(listed), Some(hidden)) =
            (s["tools_listed"].as_u64(), s["tools_hidden"].as_u64())
        {
            line.push_str(&format!(" tools: {listed} listed, {hidden} hidden"));
        }
        if let Some(names) = s["expose_unmatched"].as_array() {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            line.push_str(&format!(
                " (expose names matching no tool: {})",
                names.join(", ")
            ));
        }
        if s["restarts"].as_u64().unwrap_or(0) > 0 {
            line.push_str(&format!(" restarts: {}", s["restarts"]));
        }
        if let Some(state) = s["modernConnection"]["state"].as_str() {
            // The second connection, for 2026-07-28 clients.
            line.push_str(&format!(" 2026-07-28 connection: {state}"));
        }
        lines.push(line);
    }
    lines.push(format!("catalog: {counts}"));
    for c in collisions {
        lines.push(format!("name collision, hidden: {c}"));
    }
    result(
        lines.join("\n"),
        Some(
            json!({"sources": sources, "catalog": counts, "collisions": collisions, "sessions": sessions}),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_statistics_leave_out_the_status_tool_by_its_name() {
        assert_eq!(stats::NOT_COUNTED, STATUS_TOOL);
    }

    #[test]
    fn docs_lists_pages_without_a_page() {
        let r = docs(&json!({}));
        assert_eq!(r["isError"], json!(false));
        assert_eq!(
            r["structuredContent"]["pages"].as_array().map(Vec::len),
            Some(PAGES.len())
        );
    }

    #[test]
    fn docs_returns_a_page_and_rejects_unknown_ones() {
        let r = docs(&json!({"page": "configuration"}));
        assert!(r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("mcpyard.toml"));
        let r = docs(&json!({"page": "nope"}));
        assert_eq!(r["isError"], json!(true));
        assert!(r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("overview"));
    }
}
