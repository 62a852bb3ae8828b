//! What the gateway says of itself: the answers to `initialize` and to
//! `server/discover`.

use serde_json::{json, Value};

use super::Session;
use crate::catalog::{apps, AppsConfig};
use crate::tasks;

/// Who answers: the gateway, by name and version.
pub(crate) fn server_info() -> Value {
    json!({"name": "mcpyard", "title": "mcpyard MCP gateway", "version": env!("CARGO_PKG_VERSION")})
}

/// What the gateway serves; `extensions`: those it relays (MCP Apps when on).
pub(crate) fn server_capabilities(apps: &AppsConfig) -> Value {
    apps::with_extensions(
        json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
            "tasks": tasks::capability(),
        }),
        apps,
    )
}

const INSTRUCTIONS: &str = "mcpyard aggregates several MCP servers behind one endpoint. Tool names are prefixed with their server's name (`server__tool`). Call `mcpyard__status` to see every server and its health, and `mcpyard__docs` for reference pages. When some tools are hidden, `mcpyard__search_tools` finds them by what you want to do and `mcpyard__call_tool` calls them.";

pub(crate) fn initialize(session: &Session, params: &Value, apps: &AppsConfig) -> Value {
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
        "capabilities": server_capabilities(apps),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// `server/discover` (2026-07-28): what `initialize` would say, without
/// creating anything.
pub(crate) fn discover(apps: &AppsConfig) -> Value {
    let mut capabilities = server_capabilities(apps);
    // The era's tasks are an extension, which the gateway relays: a task
    // an upstream creates is polled, answered and cancelled through it.
    // The 2025-11-25 `tasks` capability is not of this era.
    if let Some(c) = capabilities.as_object_mut() {
        c.remove("tasks");
    }
    capabilities["extensions"][tasks::EXTENSION] = json!({});
    json!({
        "supportedVersions": mcpyard_proto::SUPPORTED,
        "capabilities": capabilities,
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}
