//! MCP Apps (the `io.modelcontextprotocol/ui` extension) through the
//! gateway: a tool names a `ui://` resource in `_meta.ui.resourceUri`, the
//! host renders it, and the page calls the server's tools through the host.
//!
//! Three things make that work behind one endpoint that merges servers:
//!
//! - the extension is declared to the upstreams (so a server that offers
//!   UI only to hosts supporting it offers it) and advertised to clients;
//! - `ui://` URIs are made unique per source: `ui://weather/view.html` of
//!   source `apps` is listed, and named in its tools' `_meta`, as
//!   `ui://apps/weather/view.html`; a read of that URI is sent upstream as
//!   the server's own, and the original spelling still reads when exactly
//!   one source has it;
//! - a page calls a tool by the name its server knows (`weather`, listed as
//!   `apps__weather`): a name no source lists resolves to the tool of that
//!   own name of the source that served the caller an app, or of the one
//!   source offering it. Resolution happens before anything else, among the
//!   tools the caller may use, and the call then goes on under the listed
//!   name: policy, exposure, limits and audit see exactly what they see for
//!   a call by that name. An ambiguous name is refused.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::call::ListItem;
use crate::RouteError;

/// The extension's identifier in `capabilities.extensions`.
pub(crate) const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP App's HTML.
pub(crate) const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The deprecated flat key for a tool's UI resource, still set by the SDK's
/// helpers next to `_meta.ui.resourceUri`.
const LEGACY_KEY: &str = "ui/resourceUri";
const SCHEME: &str = "ui://";

/// How the gateway treats MCP Apps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppsConfig {
    /// Declare the extension to upstreams and clients and make `ui://`
    /// URIs unique per source. Off: the gateway neither declares nor
    /// advertises it, and passes `ui://` URIs through as they are.
    pub enabled: bool,
    /// Resolve a tool name no source lists to the tool of that own name
    /// (see the module documentation). Only while `enabled`.
    pub resolve_unprefixed: bool,
}

impl Default for AppsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            resolve_unprefixed: true,
        }
    }
}

impl AppsConfig {
    /// The `extensions` capability the gateway declares to upstreams and
    /// advertises to clients; `None` when apps are off.
    pub(crate) fn extensions(&self) -> Option<Value> {
        self.enabled
            .then(|| json!({ EXTENSION_ID: { "mimeTypes": [MIME_TYPE] } }))
    }
}

/// Adds the extensions of `apps` to a capabilities object.
pub(crate) fn with_extensions(mut capabilities: Value, apps: &AppsConfig) -> Value {
    if let (Some(extensions), Some(caps)) = (apps.extensions(), capabilities.as_object_mut()) {
        let entry = caps
            .entry("extensions")
            .or_insert_with(|| Value::Object(Default::default()));
        if let (Some(entry), Some(extensions)) = (entry.as_object_mut(), extensions.as_object()) {
            for (k, v) in extensions {
                entry.insert(k.clone(), v.clone());
            }
        }
    }
    capabilities
}

/// Whether a client's capabilities declare the UI extension with the
/// MCP App MIME type.
pub(crate) fn client_supports_ui(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|u| u.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// Whether a tool is for apps only (`_meta.ui.visibility` without
/// `"model"`): a host shows it to no model.
pub(crate) fn is_app_only(tool: &Value) -> bool {
    tool.pointer("/_meta/ui/visibility")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.iter().any(|x| x.as_str() == Some("model")))
}

/// Whether `tool` is listed to a client: one that did not declare the
/// extension (`supports_ui`) does not get the tools meant for apps only (a
/// server that asks the client's capabilities would not have offered them
/// to it).
pub(crate) fn listed_for(tool: &ListItem, supports_ui: bool) -> bool {
    // The item's text was written by serde_json, which spells the key so:
    // most tools are settled without parsing them.
    supports_ui || !tool.json().contains("\"visibility\"") || !is_app_only(&tool.to_value())
}

/// Whether `uri` is a `ui://` URI.
pub(crate) fn is_ui_uri(uri: &str) -> bool {
    uri.get(..SCHEME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
}

/// The authority a source's `ui://` URIs are put under: its name, in
/// lower case (URI normalisation lowercases the host).
pub(crate) fn authority(source: &str) -> String {
    source.to_ascii_lowercase()
}

/// The URI a source's `ui://` URI is exposed as: `ui://<source>/<rest>`.
pub(crate) fn exposed_uri(authority: &str, uri: &str) -> Option<String> {
    is_ui_uri(uri).then(|| format!("{SCHEME}{authority}/{}", &uri[SCHEME.len()..]))
}

/// The source's own URI of an exposed one, when `uri` is under the
/// source's authority.
pub(crate) fn upstream_uri(authority: &str, uri: &str) -> Option<String> {
    if !is_ui_uri(uri) {
        return None;
    }
    let rest = &uri[SCHEME.len()..];
    let after = rest
        .get(..authority.len())
        .filter(|a| a.eq_ignore_ascii_case(authority))
        .map(|_| &rest[authority.len()..])?;
    let path = after.strip_prefix('/')?;
    Some(format!("{SCHEME}{path}"))
}

/// Rewrites the `ui://` URIs a tool names in its `_meta` (`ui.resourceUri`
/// and the legacy `ui/resourceUri`); returns the exposed URIs, so that they
/// route even when the source does not list them.
pub(crate) fn rewrite_tool(tool: &mut Value, authority: &str) -> Vec<String> {
    let mut named = Vec::new();
    let Some(meta) = tool.get_mut("_meta").and_then(Value::as_object_mut) else {
        return named;
    };
    let mut rewrite = |slot: Option<&mut Value>| {
        if let Some(slot) = slot {
            if let Some(exposed) = slot.as_str().and_then(|u| exposed_uri(authority, u)) {
                if !named.contains(&exposed) {
                    named.push(exposed.clone());
                }
                *slot = Value::String(exposed);
            }
        }
    };
    rewrite(
        meta.get_mut("ui")
            .and_then(Value::as_object_mut)
            .and_then(|ui| ui.get_mut("resourceUri")),
    );
    rewrite(meta.get_mut(LEGACY_KEY));
    named
}

/// Rewrites a listed resource's or template's URI (`key`: `uri` or
/// `uriTemplate`); returns the exposed one.
pub(crate) fn rewrite_resource(item: &mut Value, key: &str, authority: &str) -> Option<String> {
    let slot = item.get_mut(key)?;
    let exposed = exposed_uri(authority, slot.as_str()?)?;
    *slot = Value::String(exposed.clone());
    Some(exposed)
}

/// A `resources/read` result as the client asked for it: contents the
/// source gave under its own URI carry the exposed one.
pub(crate) fn rewrite_read_result(result: &mut Value, upstream: &str, exposed: &str) {
    let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) else {
        return;
    };
    for item in contents {
        if let Some(uri) = item.get_mut("uri") {
            if uri.as_str() == Some(upstream) {
                *uri = Value::String(exposed.to_owned());
            }
        }
    }
}

/// Which sources served which session an app (a `ui://` resource read):
/// the page's calls are resolved to them first. Bounded; the oldest
/// sessions are forgotten first.
#[derive(Debug, Default)]
pub(crate) struct Served {
    inner: Mutex<ServedInner>,
}

#[derive(Debug, Default)]
struct ServedInner {
    by_session: HashMap<String, Vec<usize>>,
    order: VecDeque<String>,
}

/// Sessions remembered at most.
const MAX_SESSIONS: usize = 4096;

impl Served {
    pub(crate) fn note(&self, session: &str, source: usize) {
        let mut inner = self.inner.lock().expect("apps lock poisoned");
        if let Some(sources) = inner.by_session.get_mut(session) {
            if !sources.contains(&source) {
                sources.push(source);
            }
            return;
        }
        if inner.order.len() >= MAX_SESSIONS {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_session.remove(&oldest);
            }
        }
        inner.order.push_back(session.to_owned());
        inner.by_session.insert(session.to_owned(), vec![source]);
    }

    pub(crate) fn sources(&self, session: &str) -> Vec<usize> {
        self.inner
            .lock()
            .expect("apps lock poisoned")
            .by_session
            .get(session)
            .cloned()
            .unwrap_or_default()
    }
}

/// The refusal of a name several sources offer, naming those the caller
/// may use.
pub(super) fn ambiguous(what: &str, verb: &str, names: &[String]) -> RouteError {
    let how = if names.is_empty() {
        format!("{verb} its listed name")
    } else {
        format!("{verb} one of its listed names: {}", names.join(", "))
    };
    RouteError::invalid_params(format!("{what} is offered by more than one server; {how}"))
}

/// Of several sources offering a name, the one to use: the only one, else
/// the only one among those that served the session an app. `Err` with
/// the candidates' names when that still leaves several.
pub(crate) fn choose(
    candidates: Vec<(String, usize)>,
    served: &[usize],
) -> Result<Option<String>, Vec<String>> {
    match candidates.len() {
        0 => return Ok(None),
        1 => return Ok(candidates.into_iter().next().map(|(n, _)| n)),
        _ => {}
    }
    let mut narrowed = candidates.iter().filter(|(_, s)| served.contains(s));
    if let (Some(only), None) = (narrowed.next(), narrowed.next()) {
        return Ok(Some(only.0.clone()));
    }
    let mut names: Vec<String> = candidates.into_iter().map(|(n, _)| n).collect();
    names.sort();
    Err(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_uris_go_under_their_source_and_back() {
        let a = authority("Apps");
        assert_eq!(
            exposed_uri(&a, "ui://weather/view.html").as_deref(),
            Some("ui://apps/weather/view.html")
        );
        assert_eq!(exposed_uri(&a, "file:///x"), None);
        assert_eq!(
            upstream_uri(&a, "ui://apps/weather/view.html").as_deref(),
            Some("ui://weather/view.html")
        );
        assert_eq!(upstream_uri(&a, "ui://other/weather/view.html"), None);
        assert_eq!(upstream_uri(&a, "ui://appsx/weather"), None);
        assert_eq!(upstream_uri(&a, "ui://apps"), None);
    }

    #[test]
    fn a_tool_names_its_exposed_resource_in_both_keys() {
        let mut tool = json!({"name": "weather", "_meta": {
            "ui": {"resourceUri": "ui://weather/view.html", "visibility": ["model", "app"]},
            "ui/resourceUri": "ui://weather/view.html",
        }});
        let named = rewrite_tool(&mut tool, "apps");
        assert_eq!(named, ["ui://apps/weather/view.html"]);
        assert_eq!(
            tool["_meta"]["ui"]["resourceUri"],
            "ui://apps/weather/view.html"
        );
        assert_eq!(
            tool["_meta"]["ui/resourceUri"],
            "ui://apps/weather/view.html"
        );
        assert!(!is_app_only(&tool));
        let mut plain = json!({"name": "x"});
        assert!(rewrite_tool(&mut plain, "apps").is_empty());
    }

    #[test]
    fn app_only_tools_reach_only_clients_that_declared_the_extension() {
        let page = [
            json!({"name": "a"}),
            json!({"name": "b", "_meta": {"ui": {"visibility": ["app"]}}}),
        ]
        .map(|t| ListItem::tool(&t));
        let listed = |capabilities: &Value| {
            let supports_ui = client_supports_ui(capabilities);
            let listed: Vec<_> = page
                .iter()
                .filter(|t| listed_for(t, supports_ui))
                .cloned()
                .collect();
            listed
        };
        let plain = listed(&json!({}));
        assert_eq!(plain.len(), 1);
        let host = listed(&json!({"extensions": {EXTENSION_ID: {"mimeTypes": [MIME_TYPE]}}}));
        assert_eq!(host, page);
    }

    #[test]
    fn extensions_are_added_to_capabilities_only_when_on() {
        let on = with_extensions(json!({"roots": {}}), &AppsConfig::default());
        assert!(client_supports_ui(&on));
        assert!(on.get("roots").is_some());
        let off = AppsConfig {
            enabled: false,
            ..AppsConfig::default()
        };
        assert_eq!(with_extensions(json!({}), &off), json!({}));
    }

    #[test]
    fn the_source_that_served_the_app_breaks_a_tie() {
        let two = vec![("a__x".to_owned(), 1), ("b__x".to_owned(), 2)];
        assert_eq!(choose(two.clone(), &[2]), Ok(Some("b__x".into())));
        assert_eq!(
            choose(two.clone(), &[]),
            Err(vec!["a__x".to_owned(), "b__x".to_owned()])
        );
        assert!(choose(two, &[1, 2]).is_err());
        assert_eq!(
            choose(vec![("a__x".into(), 1)], &[2]),
            Ok(Some("a__x".into()))
        );
        assert_eq!(choose(Vec::new(), &[1]), Ok(None));
        let served = Served::default();
        served.note("s", 1);
        served.note("s", 1);
        served.note("s", 2);
        assert_eq!(served.sources("s"), [1, 2]);
        assert!(served.sources("t").is_empty());
    }
}
