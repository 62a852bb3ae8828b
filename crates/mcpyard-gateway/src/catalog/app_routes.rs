//! The catalogue's side of MCP Apps: which source a `ui://` URI or a tool
//! named by a server's own name belongs to (see `apps.rs`).

use super::apps::{ambiguous, authority, choose, exposed_uri, is_ui_uri, upstream_uri};
use super::build::rewrites_ui;
use super::Catalog;
use crate::call::{Era, Identity};
use crate::RouteError;

impl Catalog {
    /// The source's own URI of a `ui://` URI it is exposed under; `None`
    /// when the source's URIs are not rewritten or `uri` is not one of them.
    pub(crate) fn upstream_ui_uri(&self, source: usize, uri: &str) -> Option<String> {
        let entries = self.entries.read().expect("catalog lock poisoned");
        let entry = entries.get(source)?;
        if !rewrites_ui(&self.apps, entry) {
            return None;
        }
        upstream_uri(&authority(&entry.name), uri)
    }

    /// Remembers that `source` served `session` an app, so that the page's
    /// calls by its server's own names go there.
    pub(crate) fn note_app_served(&self, session: &str, source: usize) {
        self.served.note(session, source);
    }

    /// The listed name a call naming `name` is for, when no source lists
    /// `name` itself: the tool whose source knows it as `name` (see the
    /// module documentation). Decided on the whole catalogue, whoever
    /// asks, so that the policy then judges the call by the listed name
    /// exactly as it judges a call by that name; an ambiguity names only
    /// the tools `identity` may use. `Ok(None)`: no such tool, or `name`
    /// is a listed name itself.
    pub(crate) fn resolve_app_tool(
        &self,
        identity: &Identity,
        era: Era,
        session: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, RouteError> {
        if !(self.apps.enabled && self.apps.resolve_unprefixed) {
            return Ok(None);
        }
        let view = self.era_view(era);
        if view.tool(name).is_some() || view.unavailable(name).is_some() {
            return Ok(None);
        }
        let builtin = self.builtin_index();
        let candidates: Vec<(String, usize)> = view
            .tools
            .iter()
            .filter(|(_, route)| *route.name == *name && Some(route.source) != builtin)
            .map(|(exposed, route)| (exposed.to_string(), route.source))
            .collect();
        let served = session.map(|s| self.served.sources(s)).unwrap_or_default();
        choose(candidates, &served).map_err(|names| {
            let visible = self.view_for(identity, era);
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| visible.tool(n).is_some())
                .collect();
            ambiguous(&format!("tool `{name}`"), "call it by", &names)
        })
    }

    /// The exposed URI a read of a source's own `ui://` URI is for, when
    /// nothing is listed under `uri` itself: the one source (among those
    /// `identity` may read, preferring those that served the session an
    /// app) that has it. `Ok(None)`: no such source, or `uri` is listed.
    pub(crate) fn resolve_app_uri(
        &self,
        identity: &Identity,
        era: Era,
        session: Option<&str>,
        uri: &str,
    ) -> Result<Option<String>, RouteError> {
        if !self.apps.enabled || !is_ui_uri(uri) {
            return Ok(None);
        }
        let view = self.era_view(era);
        if view.resource_source(uri).is_some() {
            return Ok(None);
        }
        let candidates: Vec<(String, usize)> = {
            let entries = self.entries.read().expect("catalog lock poisoned");
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| rewrites_ui(&self.apps, e))
                .filter_map(|(i, e)| {
                    let exposed = exposed_uri(&authority(&e.name), uri)?;
                    (view.resource_source(&exposed) == Some(i)).then_some((exposed, i))
                })
                .collect()
        };
        let served = session.map(|s| self.served.sources(s)).unwrap_or_default();
        choose(candidates, &served).map_err(|uris| {
            let visible = self.view_for(identity, era);
            let uris: Vec<String> = uris
                .into_iter()
                .filter(|u| visible.resource_source(u).is_some())
                .collect();
            ambiguous(&format!("`{uri}`"), "read it by", &uris)
        })
    }

    fn builtin_index(&self) -> Option<usize> {
        self.entries
            .read()
            .expect("catalog lock poisoned")
            .iter()
            .position(|e| e.name == crate::call::GATEWAY_SOURCE)
    }
}
