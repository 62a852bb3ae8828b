//! `[apps]`: MCP Apps (the `io.modelcontextprotocol/ui` extension).

use serde::Deserialize;

use mcpyard_gateway::AppsConfig;

/// `[apps]`, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApps {
    enabled: Option<bool>,
    resolve_unprefixed: Option<bool>,
}

/// The settings `[apps]` makes (on unless turned off).
pub(crate) fn settings(raw: Option<&RawApps>) -> AppsConfig {
    let defaults = AppsConfig::default();
    let Some(raw) = raw else {
        return defaults;
    };
    AppsConfig {
        enabled: raw.enabled.unwrap_or(defaults.enabled),
        resolve_unprefixed: raw
            .resolve_unprefixed
            .unwrap_or(defaults.resolve_unprefixed),
    }
}
