//! How the merged views are made, in two stages: each source's items are
//! exposed (renamed, marked, rewritten) once, when that source's lists
//! change; the views of both eras are then merged from every source's
//! exposed items, which only clones shared items and fills the routes.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet};

use serde_json::Value;

use super::apps::{self, AppsConfig};
use super::exposure::Decision;
use super::exposure::Exposure;
use super::names::{exposed_name, mirrored_arguments};
use super::search::{ReadTool, ToolIndex, ToolTerms};
use super::view::{Route, SourceExposure, View};
use crate::call::{Era, ItemKind, ListItem, ListKind, SourceLists, GATEWAY_SOURCE};

/// How an entry stands to the other era's connection of the same server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pairing {
    /// One connection serves every era.
    Alone,
    /// The handshake connection of a server whose 2026-07-28 connection is
    /// the entry at this index.
    Handshake { modern: usize },
    /// The 2026-07-28 connection of the server at this index: clients of
    /// that era see it in place of that entry once it is up.
    Modern { handshake: usize },
}

/// One source as the catalog knows it.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) name: String,
    pub(super) prefix: String,
    pub(super) exposure: Exposure,
    /// What the source last listed; `None` before it first connected.
    pub(super) lists: Option<SourceLists>,
    /// A source that is down is left out of the lists.
    pub(super) up: bool,
    /// The unmatched `expose` names last logged, so each is logged once.
    pub(super) logged_unmatched: Vec<String>,
    pub(super) pairing: Pairing,
    /// Its lists as clients see them, made again when they change.
    pub(super) exposed: Exposed,
}

impl Entry {
    /// A source's entry before its first report.
    pub(super) fn new(name: String, prefix: String, exposure: Exposure) -> Self {
        Self {
            name,
            prefix,
            exposure,
            lists: None,
            up: false,
            logged_unmatched: Vec::new(),
            pairing: Pairing::Alone,
            exposed: Exposed::default(),
        }
    }

    /// Whether a client of `era` sees this entry (`entries` for its pair).
    pub(super) fn serves(&self, era: Era, entries: &[Entry]) -> bool {
        match (self.pairing, era) {
            (Pairing::Alone, _) => true,
            (Pairing::Modern { .. }, Era::Handshake) => false,
            (Pairing::Modern { .. }, Era::Modern) => self.up,
            (Pairing::Handshake { .. }, Era::Handshake) => true,
            (Pairing::Handshake { modern }, Era::Modern) => !entries[modern].up,
        }
    }
}

/// One source's items as its clients see them, before they are merged
/// with the other sources'.
#[derive(Debug, Default)]
pub(super) struct Exposed {
    /// Tools, then prompts, under their exposed names.
    named: [Vec<Named>; 2],
    /// Resources, then templates: (exposed URI or template, item).
    addressed: [Vec<(String, ListItem)>; 2],
    /// Names and patterns of its `expose` list that match none of its tools.
    unmatched: Vec<String>,
    /// While the source is down: the names its tools and prompts had.
    unavailable: Vec<(String, ItemKind)>,
    /// What the items were exposed with besides themselves: an item is
    /// exposed again only if it or these changed.
    runs_tasks: bool,
    ui_authority: Option<String>,
}

/// A tool or prompt, exposed.
#[derive(Debug)]
struct Named {
    exposed: Arc<str>,
    /// The name the source knows it by.
    name: Arc<str>,
    /// The item as the source listed it, and as clients see it (the same
    /// for a hidden tool, which clients see only through the search tools:
    /// one copy of each hidden tool's text, not two).
    from: ListItem,
    item: ListItem,
    listed: bool,
    /// One of the search tools, listed only while some tool is hidden.
    when_hiding: bool,
    /// Arguments mirrored in `Mcp-Param-*` headers (tools).
    param_headers: Vec<(String, String)>,
    /// `ui://` URIs the tool names (MCP Apps), routed with it.
    named_ui: Vec<String>,
    /// The words of a hidden tool, for the search index.
    terms: Option<ToolTerms>,
}

/// What `entry`'s current lists expose. An item whose text is the same as
/// in `previous` (and exposed under the same name) keeps what was made of
/// it there, its words for the search index among them: a change of one
/// tool among thousands reads one tool.
pub(super) fn expose(entry: &Entry, mut previous: Exposed, apps_config: &AppsConfig) -> Exposed {
    let mut exposed = Exposed::default();
    let Some(src) = &entry.lists else {
        return exposed;
    };
    if !entry.up {
        for (kind, item_kind) in [
            (ListKind::Tools, ItemKind::Tool),
            (ListKind::Prompts, ItemKind::Prompt),
        ] {
            for name in src.get(kind).iter().filter_map(ListItem::key) {
                if let Decision::Listed(name) | Decision::Hidden(name) = entry.exposure.decide(name)
                {
                    let name = exposed_name(kind, &entry.prefix, &name);
                    exposed.unavailable.push((name, item_kind));
                }
            }
        }
        return exposed;
    }
    let names = src.get(ListKind::Tools).iter().filter_map(ListItem::key);
    exposed.unmatched = entry.exposure.unmatched(names);
    let listing = entry.exposure.listing_rule(src.default_listing.as_deref());
    let when_hiding: HashSet<&str> = src.listed_when_hiding.iter().map(String::as_str).collect();
    // Its `ui://` URIs under its own authority, and those its tools name.
    exposed.ui_authority = rewrites_ui(apps_config, entry).then(|| apps::authority(&entry.name));
    exposed.runs_tasks = src.runs_tasks;
    let reusable =
        previous.runs_tasks == exposed.runs_tasks && previous.ui_authority == exposed.ui_authority;
    for (slot, kind) in [ListKind::Tools, ListKind::Prompts].into_iter().enumerate() {
        let mut before = Previous::new(if reusable {
            std::mem::take(&mut previous.named[slot])
        } else {
            Vec::new()
        });
        exposed.named[slot].reserve_exact(src.get(kind).len());
        for item in src.get(kind) {
            let Some(name) = item.key() else { continue };
            let (exposed_as, listed) = match entry.exposure.decide(name) {
                Decision::Denied => continue,
                Decision::Listed(exposed) => {
                    (exposed, kind != ListKind::Tools || listing.lists(name))
                }
                Decision::Hidden(exposed) => (exposed, false),
            };
            let exposed_as = exposed_name(kind, &entry.prefix, &exposed_as);
            let listed_when_hiding = kind == ListKind::Tools && when_hiding.contains(name);
            let searched = kind == ListKind::Tools && !listed && !listed_when_hiding;
            let mut named = match before.take(name) {
                Some(old)
                    if old.from == *item
                        && *old.exposed == *exposed_as
                        && old.terms.is_some() == searched =>
                {
                    old
                }
                _ => expose_named(
                    kind,
                    item,
                    exposed_as,
                    src.runs_tasks,
                    &exposed.ui_authority,
                ),
            };
            named.listed = listed;
            named.when_hiding = listed_when_hiding;
            if searched && named.terms.is_none() {
                named.terms = Some(ToolTerms::read(&named.exposed, &entry.name, &named.item));
                named.item = named.from.clone();
            }
            exposed.named[slot].push(named);
        }
    }
    for (slot, kind) in [ListKind::Resources, ListKind::ResourceTemplates]
        .into_iter()
        .enumerate()
    {
        for item in src.get(kind) {
            let item = match &exposed.ui_authority {
                Some(authority) => {
                    let mut value = item.to_value();
                    apps::rewrite_resource(&mut value, kind.item_key(), authority);
                    ListItem::new(kind, &value)
                }
                None => item.clone(),
            };
            let Some(address) = item.key().map(str::to_owned) else {
                continue;
            };
            exposed.addressed[slot].push((address, item));
        }
    }
    exposed
}

/// A source's items as they were exposed before its lists changed, each
/// to be taken once by the item of the same name.
struct Previous {
    named: Vec<Option<Named>>,
    /// Where the item after the last one taken is: a source that keeps its
    /// order (the usual case) is matched without hashing a name.
    next: usize,
    /// Each name's position, made the first time an item is out of place.
    at: Option<HashMap<Arc<str>, usize>>,
}

impl Previous {
    fn new(named: Vec<Named>) -> Self {
        Self {
            named: named.into_iter().map(Some).collect(),
            next: 0,
            at: None,
        }
    }

    fn take(&mut self, name: &str) -> Option<Named> {
        let at = match self.named.get(self.next) {
            Some(Some(n)) if *n.name == *name => self.next,
            _ => {
                let named = &self.named;
                let at = self.at.get_or_insert_with(|| {
                    let mut at = HashMap::with_capacity(named.len());
                    for (i, n) in named.iter().enumerate() {
                        if let Some(n) = n {
                            at.entry(n.name.clone()).or_insert(i);
                        }
                    }
                    at
                });
                *at.get(name)?
            }
        };
        self.next = at + 1;
        self.named[at].take()
    }
}

/// A tool or prompt as clients see it: renamed, a tool marked with the
/// gateway's task support and its `ui://` URIs rewritten.
fn expose_named(
    kind: ListKind,
    item: &ListItem,
    exposed_as: String,
    runs_tasks: bool,
    ui_authority: &Option<String>,
) -> Named {
    let mut value = item.to_value();
    let mut named = Named {
        exposed: Arc::from(exposed_as.as_str()),
        name: item.shared_key().unwrap_or_else(|| Arc::from("")),
        from: item.clone(),
        item: item.clone(),
        listed: false,
        when_hiding: false,
        param_headers: Vec::new(),
        named_ui: Vec::new(),
        terms: None,
    };
    if kind == ListKind::Tools {
        if !runs_tasks {
            crate::tasks::advertise(&mut value);
        }
        named.param_headers = mirrored_arguments(&value);
        if let Some(authority) = ui_authority {
            named.named_ui = apps::rewrite_tool(&mut value, authority);
        }
    }
    value["name"] = Value::String(exposed_as);
    named.item = ListItem::new(kind, &value);
    named
}

/// Whether a source's `ui://` URIs are put under its own authority: with
/// apps on, for every source whose names are prefixed (one whose names are
/// not keeps its URIs as they are, like its names).
pub(super) fn rewrites_ui(apps: &AppsConfig, entry: &Entry) -> bool {
    apps.enabled && !entry.prefix.is_empty() && entry.name != GATEWAY_SOURCE
}

/// The view a client of `era` sees, merged from every entry's exposed
/// items; the tools it leaves unlisted come back with their words for the
/// search index, which the caller builds (once for both eras when they
/// hide the same tools).
pub(super) fn merge(entries: &[Entry], era: Era) -> (View, Vec<ReadTool>) {
    let mut view = View::default();
    let mut param_headers = HashMap::new();
    let mut lists: [Vec<ListItem>; 4] = Default::default();
    let mut hidden = Vec::new();
    // The search tools, and where they go in the list if anything is hidden.
    let mut when_hiding: Vec<ListItem> = Vec::new();
    let mut when_hiding_at = 0;
    view.exposure = vec![SourceExposure::default(); entries.len()];
    // Sized once: a large catalogue's routes and lists do not grow by steps.
    for (slot, kind) in [ListKind::Tools, ListKind::Prompts].into_iter().enumerate() {
        let named = || entries.iter().flat_map(|e| &e.exposed.named[slot]);
        let listed = named().filter(|n| n.listed || n.when_hiding).count();
        lists[kind.index()].reserve_exact(listed);
        let count = named().count();
        match kind {
            ListKind::Tools => view.tools.reserve(count),
            _ => view.prompts.reserve(count),
        }
    }
    for (source, entry) in entries.iter().enumerate() {
        if !entry.serves(era, entries) || entry.lists.is_none() {
            continue;
        }
        let exposed = &entry.exposed;
        if !entry.up {
            for (name, kind) in &exposed.unavailable {
                view.unavailable.insert(name.clone(), (source, *kind));
            }
            continue;
        }
        view.exposure[source].unmatched = exposed.unmatched.clone();
        let source_name: Arc<str> = Arc::from(entry.name.as_str());
        let mut named_ui = Vec::new();
        for (kind, named) in [ListKind::Tools, ListKind::Prompts]
            .into_iter()
            .zip(&exposed.named)
        {
            let routes = match kind {
                ListKind::Tools => &mut view.tools,
                _ => &mut view.prompts,
            };
            for n in named {
                if routes.contains_key(&n.exposed) {
                    view.collisions
                        .push(format!("{} (also offered by {})", n.exposed, entry.name));
                    continue;
                }
                let route = Route {
                    source,
                    name: n.name.clone(),
                };
                routes.insert(n.exposed.clone(), route);
                if !n.param_headers.is_empty() {
                    param_headers.insert(n.exposed.to_string(), n.param_headers.clone());
                }
                named_ui.extend(&n.named_ui);
                if n.when_hiding {
                    when_hiding_at = lists[kind.index()].len();
                    when_hiding.push(n.item.clone());
                    continue;
                }
                if kind == ListKind::Tools {
                    let counts = &mut view.exposure[source];
                    if n.listed {
                        counts.listed += 1;
                    } else {
                        counts.hidden += 1;
                    }
                }
                if n.listed {
                    lists[kind.index()].push(n.item.clone());
                } else if kind == ListKind::Tools {
                    let terms = n
                        .terms
                        .clone()
                        .unwrap_or_else(|| ToolTerms::read(&n.exposed, &entry.name, &n.item));
                    hidden.push((
                        source_name.clone(),
                        n.exposed.clone(),
                        n.item.clone(),
                        terms,
                    ));
                }
            }
        }
        let [resources, templates] = &exposed.addressed;
        for (uri, item) in resources {
            if view.resources.contains_key(uri) {
                view.collisions
                    .push(format!("resource {uri} (also offered by {})", entry.name));
                continue;
            }
            view.resources.insert(uri.clone(), source);
            lists[ListKind::Resources.index()].push(item.clone());
        }
        // A UI resource its tools name routes even when it is not listed
        // (the extension lets servers leave them out of `resources/list`).
        for uri in named_ui {
            view.resources.entry(uri.clone()).or_insert(source);
        }
        for (template, item) in templates {
            view.templates.push((template.clone(), source));
            lists[ListKind::ResourceTemplates.index()].push(item.clone());
        }
    }
    if !hidden.is_empty() {
        let tools = &mut lists[ListKind::Tools.index()];
        let at = when_hiding_at.min(tools.len());
        tools.splice(at..at, when_hiding);
    }
    view.param_headers = Arc::new(param_headers);
    view.lists = lists.map(Arc::new);
    (view, hidden)
}

/// The views of both eras (handshake, then 2026-07-28), each with its
/// search index, made from the index of the views they replace. One view
/// serves both when no server has a connection per era; otherwise they
/// share the index when they hide the same tools.
pub(super) fn views(entries: &[Entry], previous: &[Arc<View>; 2]) -> [Arc<View>; 2] {
    let (mut handshake, hidden) = merge(entries, Era::Handshake);
    if entries.iter().all(|e| e.pairing == Pairing::Alone) {
        handshake.hidden = ToolIndex::after(&previous[0].hidden, hidden);
        let view = Arc::new(handshake);
        return [view.clone(), view];
    }
    let (mut modern, modern_hidden) = merge(entries, Era::Modern);
    // Compared in place: the names and items are not cloned to be compared.
    fn key((source, name, item, _): &ReadTool) -> (&Arc<str>, &Arc<str>, &ListItem) {
        (source, name, item)
    }
    let same = hidden.iter().map(key).eq(modern_hidden.iter().map(key));
    let index = ToolIndex::after(&previous[0].hidden, hidden);
    handshake.hidden = index.clone();
    modern.hidden = if same {
        index
    } else {
        ToolIndex::after(&previous[1].hidden, modern_hidden)
    };
    [Arc::new(handshake), Arc::new(modern)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lists(beta: &str) -> SourceLists {
        SourceLists::tools(vec![
            json!({"name": "a", "description": "alpha tool", "inputSchema": {"type": "object"}}),
            json!({"name": "b", "description": beta, "inputSchema": {"type": "object"}}),
        ])
    }

    fn terms_of(exposed: &Exposed, name: &str) -> ToolTerms {
        let named = exposed.named[0].iter().find(|n| *n.name == *name);
        named
            .and_then(|n| n.terms.clone())
            .expect("hidden tool read")
    }

    #[test]
    fn a_change_reads_only_the_items_that_changed() {
        let mut entry = Entry {
            name: "src".into(),
            prefix: "src__".into(),
            exposure: Exposure {
                hidden: vec!["*".into()],
                ..Exposure::default()
            },
            lists: Some(lists("beta tool")),
            up: true,
            logged_unmatched: Vec::new(),
            pairing: Pairing::Alone,
            exposed: Exposed::default(),
        };
        let apps = AppsConfig::default();
        entry.exposed = expose(&entry, Exposed::default(), &apps);
        let (a, b) = (terms_of(&entry.exposed, "a"), terms_of(&entry.exposed, "b"));

        entry.lists = Some(lists("gamma tool"));
        let previous = std::mem::take(&mut entry.exposed);
        entry.exposed = expose(&entry, previous, &apps);
        assert!(terms_of(&entry.exposed, "a").is(&a), "a was read again");
        assert!(
            !terms_of(&entry.exposed, "b").is(&b),
            "b kept its old words"
        );

        let [view, _] = views(std::slice::from_ref(&entry), &Default::default());
        let index = view.hidden();
        let found = |q: &str| -> Vec<String> {
            let hits = index.search(q, 5);
            hits.iter()
                .map(|h| index.tools()[h.index].name.to_string())
                .collect()
        };
        assert_eq!(found("gamma"), ["src__b"]);
        assert!(found("beta").is_empty());
        assert_eq!(found("alpha"), ["src__a"]);
        // A hidden tool keeps the source's text (clients see it only
        // through the search tools, under its exposed name).
        let named = &entry.exposed.named[0][1];
        assert_eq!(&*named.exposed, "src__b");
        assert!(
            named.item == named.from,
            "the hidden tool was renamed in a copy"
        );
        assert_eq!(named.item.to_value()["description"], "gamma tool");
    }

    #[test]
    fn a_source_that_reorders_its_tools_keeps_what_was_read_of_each() {
        let tool = |name: &str| json!({"name": name, "description": format!("{name} tool")});
        let mut entry = Entry::new(
            "src".into(),
            "src__".into(),
            Exposure {
                hidden: vec!["*".into()],
                ..Exposure::default()
            },
        );
        entry.up = true;
        entry.lists = Some(SourceLists::tools(vec![tool("a"), tool("b"), tool("c")]));
        let apps = AppsConfig::default();
        entry.exposed = expose(&entry, Exposed::default(), &apps);
        let before: Vec<ToolTerms> = ["a", "b", "c"]
            .iter()
            .map(|n| terms_of(&entry.exposed, n))
            .collect();

        // Reversed, with a new tool in the middle and one listed twice.
        entry.lists = Some(SourceLists::tools(vec![
            tool("c"),
            tool("new"),
            tool("b"),
            tool("a"),
            tool("a"),
        ]));
        let previous = std::mem::take(&mut entry.exposed);
        entry.exposed = expose(&entry, previous, &apps);
        for (name, terms) in ["a", "b", "c"].iter().zip(&before) {
            assert!(
                terms_of(&entry.exposed, name).is(terms),
                "{name} was read again"
            );
        }
        let names: Vec<&str> = entry.exposed.named[0].iter().map(|n| &*n.name).collect();
        assert_eq!(names, ["c", "new", "b", "a", "a"]);
        let second_a = &entry.exposed.named[0][4];
        assert!(
            !second_a.terms.as_ref().expect("read").is(&before[0]),
            "one reading was given to two items"
        );
    }
}
