//! A merged view of the catalogue, as one era or one identity sees it:
//! the lists, and the routes from each listed name back to its source.

use std::sync::Arc;

use foldhash::HashMap;

use super::resource_uri;
use super::search::ToolIndex;
use crate::call::Identity;
use crate::call::{ItemKind, ListItem, ListKind};
use crate::governance::{Item, Policy, Verdict};

/// Where a name leads: the source's index and the name it knows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Route {
    pub(crate) source: usize,
    pub(crate) name: Arc<str>,
}

/// The merged, renamed lists and the routes back.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub(super) lists: [Arc<Vec<ListItem>>; 4],
    /// Names are shared with the catalogue's exposed items: a change of a
    /// large catalogue copies none of them.
    pub(super) tools: HashMap<Arc<str>, Route>,
    pub(super) prompts: HashMap<Arc<str>, Route>,
    pub(super) resources: HashMap<String, usize>,
    /// (URI template, source)
    pub(super) templates: Vec<(String, usize)>,
    /// Names offered by more than one source; the first source keeps them.
    pub(crate) collisions: Vec<String>,
    /// Tool and prompt names of sources that are down, so a call to one
    /// fails naming its server instead of as an unknown name.
    pub(super) unavailable: HashMap<String, (usize, ItemKind)>,
    /// The tools offered but not listed, indexed for search.
    pub(super) hidden: Arc<ToolIndex>,
    /// Per exposed tool name, the arguments its schema mirrors in HTTP
    /// headers (`x-mcp-header`, 2026-07-28): (argument, header suffix).
    pub(super) param_headers: Arc<HashMap<String, Vec<(String, String)>>>,
    /// Per source (by index), what its exposure made of its tools.
    pub(super) exposure: Vec<SourceExposure>,
}

/// What one source's exposure made of its tools, for the status tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SourceExposure {
    pub(crate) listed: usize,
    pub(crate) hidden: usize,
    /// Names and patterns of an `expose` list that match none of its tools.
    pub(crate) unmatched: Vec<String>,
}

impl View {
    pub(crate) fn tool(&self, name: &str) -> Option<&Route> {
        self.tools.get(name)
    }

    /// The source of a tool or prompt name whose source is down.
    pub(crate) fn unavailable(&self, name: &str) -> Option<usize> {
        self.unavailable.get(name).map(|(source, _)| *source)
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&Route> {
        self.prompts.get(name)
    }

    /// The source that owns a resource URI: a listed resource, else the
    /// matching template that fixes most of the URI.
    pub(crate) fn resource_source(&self, uri: &str) -> Option<usize> {
        if let Some(s) = self.resources.get(uri) {
            return Some(*s);
        }
        self.templates
            .iter()
            .filter(|(template, _)| resource_uri::template_matches(template, uri))
            .max_by_key(|(template, _)| resource_uri::literal_prefix(template).len())
            .map(|(_, s)| *s)
    }

    /// The one source whose listed resources or templates share `uri`'s
    /// scheme and authority: the owner of a URI nothing lists (a resource
    /// made after the list was read). `None` when no source, or several,
    /// could own it.
    pub(crate) fn resource_owner(&self, uri: &str) -> Option<usize> {
        let origin = |u: &str| -> Option<String> {
            let (scheme, rest) = u.split_once("://")?;
            let authority = rest.split(['/', '?', '#', '{']).next().unwrap_or_default();
            Some(format!(
                "{}://{}",
                scheme.to_ascii_lowercase(),
                authority.to_ascii_lowercase()
            ))
        };
        let wanted = origin(uri)?;
        let mut owners = self
            .resources
            .iter()
            .map(|(u, s)| (u.as_str(), *s))
            .chain(self.templates.iter().map(|(t, s)| (t.as_str(), *s)))
            .filter(|(u, _)| origin(u).as_deref() == Some(wanted.as_str()))
            .map(|(_, s)| s);
        let first = owners.next()?;
        owners.all(|s| s == first).then_some(first)
    }

    /// Whether this view offers anything of source `index`: a tool
    /// (listed or hidden: both are routed), a prompt, a resource or a
    /// resource template.
    pub(crate) fn serves(&self, index: usize) -> bool {
        self.tools.values().any(|r| r.source == index)
            || self.prompts.values().any(|r| r.source == index)
            || self.resources.values().any(|s| *s == index)
            || self.templates.iter().any(|(_, s)| *s == index)
    }

    pub(crate) fn list(&self, kind: ListKind) -> &Arc<Vec<ListItem>> {
        &self.lists[kind.index()]
    }

    pub(crate) fn len(&self, kind: ListKind) -> usize {
        self.lists[kind.index()].len()
    }

    /// The arguments of tool `name` its schema says a 2026-07-28 client
    /// mirrors in `Mcp-Param-*` headers; none for a name this view does
    /// not route (nothing tells a caller of a tool it may not use).
    pub(crate) fn param_headers(&self, name: &str) -> &[(String, String)] {
        match self.tools.get(name) {
            Some(_) => self.param_headers.get(name).map_or(&[], Vec::as_slice),
            None => &[],
        }
    }

    /// The tools that are offered but not listed.
    /// How many tools of source `index` the view routes (listed or hidden).
    pub(crate) fn tools_of(&self, index: usize) -> usize {
        self.tools.values().filter(|r| r.source == index).count()
    }

    pub(crate) fn hidden(&self) -> &Arc<ToolIndex> {
        &self.hidden
    }

    /// What source `index`'s exposure made of its tools.
    pub(crate) fn exposure(&self, index: usize) -> SourceExposure {
        self.exposure.get(index).cloned().unwrap_or_default()
    }

    /// This view without the items `policy` does not list for `identity`;
    /// `sources` names the sources by index.
    pub(super) fn visible_to(
        &self,
        identity: &Identity,
        policy: &Policy,
        sources: &[String],
    ) -> View {
        let allowed = |kind: ItemKind, name: &str, source: usize| {
            let source = sources.get(source).map_or("", String::as_str);
            policy.lists(identity, Item { kind, name, source }) == Verdict::Allow
        };
        let routed =
            |routes: &HashMap<Arc<str>, Route>, kind: ItemKind| -> HashMap<Arc<str>, Route> {
                routes
                    .iter()
                    .filter(|(name, route)| allowed(kind, name, route.source))
                    .map(|(n, r)| (n.clone(), r.clone()))
                    .collect()
            };
        let tools = routed(&self.tools, ItemKind::Tool);
        let prompts = routed(&self.prompts, ItemKind::Prompt);
        let resources: HashMap<String, usize> = self
            .resources
            .iter()
            .filter(|(uri, source)| allowed(ItemKind::Resource, uri, **source))
            .map(|(u, s)| (u.clone(), *s))
            .collect();
        let template_items = self.list(ListKind::ResourceTemplates);
        let (templates, template_list): (Vec<_>, Vec<_>) = self
            .templates
            .iter()
            .zip(template_items.iter())
            .filter(|((template, source), _)| allowed(ItemKind::Resource, template, *source))
            .map(|(t, item)| (t.clone(), item.clone()))
            .unzip();
        let keep = |kind: ListKind, known: &dyn Fn(&str) -> bool| -> Arc<Vec<ListItem>> {
            Arc::new(
                self.list(kind)
                    .iter()
                    .filter(|item| known(item.key().unwrap_or_default()))
                    .cloned()
                    .collect(),
            )
        };
        let lists = [
            keep(ListKind::Tools, &|n| tools.contains_key(n)),
            keep(ListKind::Resources, &|u| resources.contains_key(u)),
            Arc::new(template_list),
            keep(ListKind::Prompts, &|n| prompts.contains_key(n)),
        ];
        let source_index =
            |name: &str| sources.iter().position(|s| s == name).unwrap_or(usize::MAX);
        let hidden = self
            .hidden
            .retain(|t| allowed(ItemKind::Tool, &t.name, source_index(&t.source)));
        // Each name by its own kind: a rule about tools says nothing of a
        // prompt, so a tool it denies must not slip through as one.
        let unavailable = self
            .unavailable
            .iter()
            .filter(|(name, (source, kind))| allowed(*kind, name, *source))
            .map(|(n, s)| (n.clone(), *s))
            .collect();
        View {
            lists,
            tools,
            prompts,
            resources,
            templates,
            collisions: self.collisions.clone(),
            unavailable,
            hidden: Arc::new(hidden),
            param_headers: self.param_headers.clone(),
            exposure: self.exposure.clone(),
        }
    }
}
