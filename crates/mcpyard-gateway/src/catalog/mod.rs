//! The catalog: every source's tools, resources, resource templates and
//! prompts merged under stable names, with the routes back to their source.
//!
//! Each source's lists are cached here and replaced only when the source
//! (re)connects or says `notifications/*/list_changed`; the merged view is
//! rebuilt then, so `tools/list` is an `Arc` clone and a slice, never a fan-out.
//! Between a source's lists and the merged view sits the exposure stage
//! (`exposure.rs`): per source, what is offered and under which name, and
//! what is listed; the tools left unlisted are indexed for search
//! (`search.rs`) with each new view.
//!
//! Its maps of names hash with foldhash, seeded per map, not std's SipHash:
//! a change of a large catalogue hashes tens of thousands of names, and
//! the names come from the configured sources, not from clients.

mod app_routes;
pub(crate) mod apps;
mod build;
mod exposure;
mod names;
mod page;
mod reload;
pub(crate) mod resource_uri;
mod search;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

pub use apps::AppsConfig;
use build::{Entry, Pairing};
pub use exposure::matches;
pub use exposure::{Exposure, Listing};
pub(crate) use names::is_valid_tool_name;
pub use search::{Hit, IndexedTool, ToolIndex};
pub(crate) use view::{Route, View};

use crate::governance::{Item, Policy, Verdict};

use crate::call::ItemKind;
use crate::call::{Era, Identity, ListItem, ListKind, SourceLists};
use crate::RouteError;
use mcpyard_proto::Payload;

#[derive(Debug)]
pub(crate) struct Catalog {
    entries: RwLock<Vec<Entry>>,
    /// The merged view of each era: handshake, then 2026-07-28.
    views_by_era: RwLock<[Arc<View>; 2]>,
    page_size: usize,
    /// Who may see what; `None`: everyone sees the whole view. Replaced by
    /// a reload.
    policy: RwLock<Option<Arc<Policy>>>,
    views: Mutex<IdentityViews>,
    /// MCP Apps: `ui://` URIs per source, calls by a server's own names.
    apps: AppsConfig,
    /// Which sources served which session an app.
    served: apps::Served,
}

/// The views of the identities seen since the catalogue last changed.
#[derive(Debug, Default)]
struct IdentityViews {
    /// The views they were made from: when one is replaced, they are stale.
    base: [Arc<View>; 2],
    /// By era, then identity: looked up by reference on every call.
    by_identity: [HashMap<Identity, Arc<View>, foldhash::fast::RandomState>; 2],
}

impl IdentityViews {
    fn clear(&mut self) {
        self.by_identity.iter_mut().for_each(HashMap::clear);
    }
}

/// Identities whose views are kept before the cache starts over.
const MAX_CACHED_VIEWS: usize = 1024;

impl crate::source::ListsPort for Catalog {
    fn set_lists(&self, index: usize, lists: Option<SourceLists>) -> Vec<ListKind> {
        Catalog::set_lists(self, index, lists)
    }

    fn serves(&self, index: usize, identity: &Identity, era: Era) -> bool {
        self.view_for(identity, era).serves(index)
    }
}

impl Catalog {
    /// A catalog with one entry per source, in order: `(name, prefix,
    /// exposure)`.
    pub(crate) fn new(
        sources: Vec<(String, String, Exposure)>,
        page_size: usize,
        policy: Option<Arc<Policy>>,
    ) -> Self {
        let entries = sources
            .into_iter()
            .map(|(name, prefix, exposure)| Entry::new(name, prefix, exposure))
            .collect();
        Self {
            entries: RwLock::new(entries),
            views_by_era: RwLock::default(),
            page_size: page_size.max(1),
            policy: RwLock::new(policy.filter(|p| !p.allows_all())),
            views: Mutex::default(),
            apps: AppsConfig::default(),
            served: apps::Served::default(),
        }
    }

    /// Makes the entry at `modern` the 2026-07-28 connection of the server
    /// at `handshake`: clients of that era see it in that one's place while
    /// it is up.
    pub(crate) fn pair_eras(&self, handshake: usize, modern: usize) {
        let mut entries = self.entries.write().expect("catalog lock poisoned");
        entries[handshake].pairing = Pairing::Handshake { modern };
        entries[modern].pairing = Pairing::Modern { handshake };
    }

    /// The entry that serves clients of `era` for the server of entry
    /// `index`: its 2026-07-28 connection while that one is up.
    pub(crate) fn serving(&self, index: usize, era: Era) -> usize {
        let entries = self.entries.read().expect("catalog lock poisoned");
        match entries.get(index).map(|e| e.pairing) {
            Some(Pairing::Handshake { modern }) if era == Era::Modern && entries[modern].up => {
                modern
            }
            _ => index,
        }
    }

    /// This catalog with these MCP Apps settings (the default: on).
    pub(crate) fn with_apps(mut self, apps: AppsConfig) -> Self {
        self.apps = apps;
        self
    }

    pub(crate) fn apps(&self) -> AppsConfig {
        self.apps
    }

    /// The whole handshake-era view, before policy: what the gateway itself
    /// works on.
    pub(crate) fn view(&self) -> Arc<View> {
        self.era_view(Era::Handshake)
    }

    /// The whole view of an era, before policy.
    pub(crate) fn era_view(&self, era: Era) -> Arc<View> {
        self.views_by_era.read().expect("catalog lock poisoned")[era as usize].clone()
    }

    /// The view one caller sees: its era's, without what the policy does
    /// not let it use. Built once per identity and era and kept until the
    /// catalogue changes.
    pub(crate) fn view_for(&self, identity: &Identity, era: Era) -> Arc<View> {
        let bases = self
            .views_by_era
            .read()
            .expect("catalog lock poisoned")
            .clone();
        let base = bases[era as usize].clone();
        let Some(policy) = self.policy() else {
            return base;
        };
        {
            let mut views = self.views.lock().expect("catalog lock poisoned");
            if !views
                .base
                .iter()
                .zip(&bases)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            {
                views.base = bases.clone();
                views.clear();
            }
            if let Some(view) = views.by_identity[era as usize].get(identity) {
                return view.clone();
            }
        }
        let names: Vec<String> = self
            .entries
            .read()
            .expect("catalog lock poisoned")
            .iter()
            .map(|e| e.name.clone())
            .collect();
        let view = Arc::new(base.visible_to(identity, &policy, &names));
        let mut views = self.views.lock().expect("catalog lock poisoned");
        // Kept only if neither the catalogue nor the policy changed meanwhile.
        let same_policy = self.policy().is_some_and(|p| Arc::ptr_eq(&p, &policy));
        if same_policy
            && views
                .base
                .iter()
                .zip(&bases)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        {
            let cached = &mut views.by_identity[era as usize];
            if cached.len() >= MAX_CACHED_VIEWS {
                cached.clear();
            }
            cached.insert(identity.clone(), view.clone());
        }
        view
    }

    /// Where an item the catalogue has but the policy keeps from
    /// `identity` leads; `None` when the item does not exist or is allowed.
    pub(crate) fn refused_route(
        &self,
        identity: &Identity,
        era: Era,
        kind: ItemKind,
        name: &str,
    ) -> Option<Route> {
        self.refusal_of(identity, era, kind, name)
            .map(|(route, _)| route)
    }

    /// The policy's refusal of an item the catalogue has, as the error a
    /// client gets (word for word an unknown name's).
    pub(crate) fn refusal(
        &self,
        identity: &Identity,
        era: Era,
        kind: ItemKind,
        name: &str,
    ) -> Option<RouteError> {
        self.refusal_of(identity, era, kind, name)
            .map(|(_, rule)| RouteError::Denied {
                kind,
                name: name.to_owned(),
                rule,
            })
    }

    fn refusal_of(
        &self,
        identity: &Identity,
        era: Era,
        kind: ItemKind,
        name: &str,
    ) -> Option<(Route, Option<usize>)> {
        let policy = self.policy()?;
        let view = self.era_view(era);
        let route = match kind {
            ItemKind::Tool => view.tool(name).cloned(),
            ItemKind::Prompt => view.prompt(name).cloned(),
            ItemKind::Resource => view.resource_source(name).map(|source| Route {
                source,
                name: name.into(),
            }),
        }?;
        let entries = self.entries.read().expect("catalog lock poisoned");
        let item = Item {
            kind,
            name,
            source: &entries.get(route.source)?.name,
        };
        match policy.lists(identity, item) {
            Verdict::Allow => None,
            Verdict::Deny { rule } => Some((route, rule)),
        }
    }

    /// Replaces a source's lists (`None`: the source is down). Returns the
    /// kinds whose merged list changed, so clients can be told.
    pub(crate) fn set_lists(&self, source: usize, lists: Option<SourceLists>) -> Vec<ListKind> {
        let mut entries = self.entries.write().expect("catalog lock poisoned");
        let Some(entry) = entries.get_mut(source) else {
            return Vec::new();
        };
        let up = lists.is_some();
        if entry.up == up && (lists.is_none() || entry.lists == lists) {
            return Vec::new();
        }
        entry.up = up;
        if lists.is_some() {
            entry.lists = lists;
        }
        self.rebuild(&mut entries, source)
    }

    /// Exposes entry `source`'s lists again and makes the views anew from
    /// every entry. Returns the kinds whose merged list changed.
    fn rebuild(&self, entries: &mut [Entry], source: usize) -> Vec<ListKind> {
        let entry = &mut entries[source];
        let previous = std::mem::take(&mut entry.exposed);
        entry.exposed = build::expose(entry, previous, &self.apps);
        let up = entry.up;
        let previous = self
            .views_by_era
            .read()
            .expect("catalog lock poisoned")
            .clone();
        let views = build::views(entries, &previous);
        let view = &views[match entries[source].pairing {
            Pairing::Modern { .. } => Era::Modern as usize,
            _ => Era::Handshake as usize,
        }];
        let unmatched = &view.exposure[source].unmatched;
        if up && !unmatched.is_empty() && *unmatched != entries[source].logged_unmatched {
            tracing::warn!(
                source = %entries[source].name,
                names = ?unmatched,
                "`expose` names that match none of the source's tools"
            );
        }
        entries[source].logged_unmatched = unmatched.clone();
        let mut slots = self.views_by_era.write().expect("catalog lock poisoned");
        // A change in either era's lists is announced to every client:
        // level-triggered, one needless refetch at worst.
        let changed = ListKind::ALL
            .into_iter()
            .filter(|k| {
                slots.iter().zip(&views).any(|(old, new)| {
                    let hidden_changed = *k == ListKind::Tools
                        && !old.hidden.tools().iter().map(|t| &t.name).eq(new
                            .hidden
                            .tools()
                            .iter()
                            .map(|t| &t.name));
                    old.list(*k) != new.list(*k) || hidden_changed
                })
            })
            .collect();
        *slots = views;
        changed
    }

    /// Items per page of the lists (also of the hidden tools' list).
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// One page of a merged list, as a list result (`{key: [...],
    /// nextCursor?}`) followed by `members` (the era's own), written from
    /// the items' text without parsing them; of the page's items, those
    /// `listed` keeps. The cursor is opaque: an offset into the merged list.
    pub(crate) fn page(
        &self,
        kind: ListKind,
        cursor: Option<&str>,
        identity: &Identity,
        era: Era,
        listed: &dyn Fn(&ListItem) -> bool,
        members: &[(&str, Value)],
    ) -> Result<Payload, RouteError> {
        let view = self.view_for(identity, era);
        page::write(
            view.list(kind),
            kind,
            cursor,
            self.page_size,
            listed,
            members,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::names::exposed_name;
    use super::page::encode_cursor;
    use super::*;
    use serde_json::json;

    fn lists(tools: &[&str]) -> SourceLists {
        let mut l = SourceLists::default();
        l.set(
            ListKind::Tools,
            tools
                .iter()
                .map(|t| json!({"name": t, "inputSchema": {"type": "object"}}))
                .collect(),
        );
        l
    }

    fn catalog(page: usize) -> Catalog {
        Catalog::new(
            vec![
                ("a".into(), "a__".into(), Exposure::default()),
                ("b".into(), "".into(), Exposure::default()),
            ],
            page,
            None,
        )
    }

    #[test]
    fn names_are_prefixed_and_route_back() {
        let c = catalog(100);
        c.set_lists(0, Some(lists(&["echo"])));
        c.set_lists(1, Some(lists(&["time"])));
        let view = c.view();
        assert_eq!(
            view.tool("a__echo"),
            Some(&Route {
                source: 0,
                name: "echo".into()
            })
        );
        assert_eq!(
            view.tool("time"),
            Some(&Route {
                source: 1,
                name: "time".into()
            })
        );
        assert_eq!(view.tool("echo"), None);
        let names: Vec<_> = view
            .list(ListKind::Tools)
            .iter()
            .map(|t| t.to_value()["name"].clone())
            .collect();
        assert_eq!(names, vec![json!("a__echo"), json!("time")]);
    }

    #[test]
    fn a_source_that_goes_down_leaves_the_lists() {
        let c = catalog(100);
        c.set_lists(0, Some(lists(&["echo"])));
        c.set_lists(1, Some(lists(&["time"])));
        assert_eq!(c.set_lists(0, None), vec![ListKind::Tools]);
        assert_eq!(c.view().len(ListKind::Tools), 1);
        assert!(c.view().tool("a__echo").is_none());
        assert_eq!(c.view().unavailable("a__echo"), Some(0));
        assert_eq!(
            c.set_lists(0, Some(lists(&["echo"]))),
            vec![ListKind::Tools]
        );
        assert_eq!(c.view().unavailable("a__echo"), None);
    }

    #[test]
    fn each_era_sees_its_own_connection_of_a_server_of_both() {
        let c = Catalog::new(
            vec![
                ("a".into(), "a__".into(), Exposure::default()),
                ("a".into(), "a__".into(), Exposure::default()),
            ],
            100,
            None,
        );
        c.pair_eras(0, 1);
        c.set_lists(0, Some(lists(&["echo", "ask"])));
        let tools = |era: Era| -> Vec<(String, usize)> {
            let view = c.view_for(&Identity::anonymous(), era);
            let mut t: Vec<_> = view
                .list(ListKind::Tools)
                .iter()
                .map(|t| t.to_value()["name"].as_str().unwrap().to_owned())
                .map(|n| {
                    let source = view.tool(&n).unwrap().source;
                    (n, source)
                })
                .collect();
            t.sort();
            t
        };
        // Until the second connection is up, both eras see the first one's.
        assert_eq!(tools(Era::Modern), tools(Era::Handshake));
        assert_eq!(
            c.set_lists(1, Some(lists(&["echo", "needs_input"]))),
            vec![ListKind::Tools]
        );
        assert_eq!(
            tools(Era::Handshake),
            [("a__ask".to_owned(), 0), ("a__echo".to_owned(), 0)]
        );
        assert_eq!(
            tools(Era::Modern),
            [("a__echo".to_owned(), 1), ("a__needs_input".to_owned(), 1)]
        );
        // Down (or of the handshake era alone): served by the first again,
        // and not as unavailable names.
        assert_eq!(c.serving(0, Era::Modern), 1);
        assert_eq!(c.serving(0, Era::Handshake), 0);
        c.set_lists(1, None);
        assert_eq!(c.serving(0, Era::Modern), 0);
        assert_eq!(tools(Era::Modern), tools(Era::Handshake));
        assert!(c
            .era_view(Era::Modern)
            .unavailable("a__needs_input")
            .is_none());
    }

    #[test]
    fn unchanged_lists_report_no_change() {
        let c = catalog(100);
        assert_eq!(
            c.set_lists(0, Some(lists(&["echo"]))),
            vec![ListKind::Tools]
        );
        assert!(c.set_lists(0, Some(lists(&["echo"]))).is_empty());
    }

    #[test]
    fn tool_names_outside_the_spec_rule_are_made_valid_and_route_back() {
        let long = "x".repeat(130);
        let c = catalog(100);
        c.set_lists(0, Some(lists(&["has space", "café", &long])));
        let view = c.view();
        let names: Vec<String> = view
            .list(ListKind::Tools)
            .iter()
            .map(|t| t.to_value()["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(names[0], "a__has_space");
        assert_eq!(names[1], "a__caf_");
        assert_eq!(names[2].len(), 128);
        assert!(names.iter().all(|n| is_valid_tool_name(n)), "{names:?}");
        assert_eq!(
            view.tool("a__has_space").map(|r| &*r.name),
            Some("has space")
        );
        assert_eq!(view.tool(&names[2]).map(|r| &*r.name), Some(long.as_str()));
        // Two long names that differ only past the cut stay apart.
        let other = format!("{}y", "x".repeat(129));
        assert_ne!(
            exposed_name(ListKind::Tools, "a__", &long),
            exposed_name(ListKind::Tools, "a__", &other)
        );
        // Prompt names have no such rule and are left alone.
        assert_eq!(
            exposed_name(ListKind::Prompts, "a__", "has space"),
            "a__has space"
        );
    }

    #[test]
    fn collisions_keep_the_first_source() {
        let c = Catalog::new(
            vec![
                ("a".into(), "".into(), Exposure::default()),
                ("b".into(), "".into(), Exposure::default()),
            ],
            100,
            None,
        );
        c.set_lists(0, Some(lists(&["x"])));
        c.set_lists(1, Some(lists(&["x", "y"])));
        let view = c.view();
        assert_eq!(view.tool("x").map(|r| r.source), Some(0));
        assert_eq!(view.collisions.len(), 1);
        assert_eq!(view.len(ListKind::Tools), 2);
    }

    #[test]
    fn pagination_walks_every_item_once_across_sources() {
        let c = catalog(2);
        c.set_lists(0, Some(lists(&["1", "2", "3"])));
        c.set_lists(1, Some(lists(&["4", "5"])));
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = c
                .page(
                    ListKind::Tools,
                    cursor.as_deref(),
                    &Identity::anonymous(),
                    Era::Handshake,
                    &|_| true,
                    &[],
                )
                .unwrap()
                .into_value();
            for t in page["tools"].as_array().unwrap() {
                seen.push(t["name"].as_str().unwrap().to_owned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen, ["a__1", "a__2", "a__3", "4", "5"]);
    }

    #[test]
    fn invalid_cursor_is_invalid_params() {
        let c = catalog(2);
        for bad in [
            "garbage!",
            "",
            &encode_cursor(99, ListKind::Tools),
            &encode_cursor(0, ListKind::Prompts),
        ] {
            let err = c
                .page(
                    ListKind::Tools,
                    Some(bad),
                    &Identity::anonymous(),
                    Era::Handshake,
                    &|_| true,
                    &[],
                )
                .unwrap_err();
            assert_eq!(
                mcpyard_proto::ErrorObject::from(err).code,
                mcpyard_proto::codes::INVALID_PARAMS,
                "cursor {bad:?}"
            );
        }
    }

    #[test]
    fn resources_route_by_uri_and_template_prefix() {
        let c = catalog(10);
        let mut l = SourceLists::default();
        l.set(
            ListKind::Resources,
            vec![json!({"uri": "file:///a", "name": "a"})],
        );
        l.set(
            ListKind::ResourceTemplates,
            vec![json!({"uriTemplate": "test://template/{id}/data", "name": "t"})],
        );
        c.set_lists(1, Some(l));
        let view = c.view();
        assert_eq!(view.resource_source("file:///a"), Some(1));
        assert_eq!(view.resource_source("test://template/7/data"), Some(1));
        assert_eq!(view.resource_source("other://x"), None);
    }

    #[test]
    fn exposure_renames_hides_and_denies_before_the_prefix() {
        let exposure = Exposure {
            deny: vec!["drop".into()],
            hidden: vec!["rare".into()],
            rename: HashMap::from([("echo".into(), "say".into())]),
            ..Exposure::default()
        };
        let c = Catalog::new(vec![("a".into(), "a__".into(), exposure)], 100, None);
        c.set_lists(0, Some(lists(&["echo", "drop", "rare"])));
        let view = c.view();
        let names: Vec<_> = view
            .list(ListKind::Tools)
            .iter()
            .map(|t| t.to_value()["name"].clone())
            .collect();
        assert_eq!(names, vec![json!("a__say")]);
        assert_eq!(view.tool("a__say").map(|r| &*r.name), Some("echo"));
        assert_eq!(view.tool("a__rare").map(|r| &*r.name), Some("rare"));
        assert!(view.tool("a__drop").is_none());
        assert!(view.tool("a__echo").is_none());
    }

    /// A catalog whose first source offers the search tools (listed only
    /// while something is hidden) and whose second lists by `listing`.
    fn searching(listing: Listing) -> Catalog {
        let c = Catalog::new(
            vec![
                ("gw".into(), "gw__".into(), Exposure::default()),
                (
                    "a".into(),
                    "a__".into(),
                    Exposure {
                        listing,
                        ..Exposure::default()
                    },
                ),
            ],
            100,
            None,
        );
        let mut gw = lists(&["status", "search"]);
        gw.listed_when_hiding = vec!["search".into()];
        c.set_lists(0, Some(gw));
        c
    }

    fn listed(c: &Catalog) -> Vec<String> {
        c.view()
            .list(ListKind::Tools)
            .iter()
            .map(|t| t.to_value()["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn unlisted_tools_are_hidden_routed_and_indexed_with_the_search_tools_listed() {
        let c = searching(Listing::Only(vec![
            "echo".into(),
            "get_*".into(),
            "nope".into(),
        ]));
        c.set_lists(1, Some(lists(&["echo", "get_sum", "add", "zip"])));
        assert_eq!(
            listed(&c),
            ["gw__status", "gw__search", "a__echo", "a__get_sum"]
        );
        let view = c.view();
        assert_eq!(view.tool("a__add").map(|r| &*r.name), Some("add"));
        let hidden: Vec<&str> = view.hidden().tools().iter().map(|t| &*t.name).collect();
        assert_eq!(hidden, ["a__add", "a__zip"]);
        assert_eq!(&*view.hidden().tools()[0].source, "a");
        let exposure = view.exposure(1);
        assert_eq!((exposure.listed, exposure.hidden), (2, 2));
        assert_eq!(exposure.unmatched, ["nope"]);
    }

    #[test]
    fn with_nothing_hidden_the_search_tools_are_callable_but_not_listed() {
        let c = searching(Listing::Default);
        c.set_lists(1, Some(lists(&["echo"])));
        assert_eq!(listed(&c), ["gw__status", "a__echo"]);
        assert!(c.view().tool("gw__search").is_some());
        assert!(c.view().hidden().is_empty());
    }

    #[test]
    fn a_change_of_the_hidden_set_is_a_change_of_the_tool_list() {
        let c = searching(Listing::None);
        assert_eq!(c.set_lists(1, Some(lists(&["x"]))), vec![ListKind::Tools]);
        assert_eq!(listed(&c), ["gw__status", "gw__search"]);
        // The listed tools stay the same; the hidden ones do not.
        assert_eq!(
            c.set_lists(1, Some(lists(&["x", "y"]))),
            vec![ListKind::Tools]
        );
        assert_eq!(c.view().hidden().len(), 2);
        assert!(c.set_lists(1, Some(lists(&["x", "y"]))).is_empty());
    }

    #[test]
    fn the_default_listing_is_what_the_source_suggests() {
        let c = searching(Listing::Default);
        let mut l = lists(&["chat", "embed", "admin"]);
        l.set_default_listing(Some(vec!["chat".into(), "embed".into()]));
        c.set_lists(1, Some(l));
        assert_eq!(
            listed(&c),
            ["gw__status", "gw__search", "a__chat", "a__embed"]
        );
        assert_eq!(c.view().hidden().len(), 1);
    }

    /// One source `a` offering `echo` and `secret`, and a policy that keeps
    /// the tools matching `tools` from the key bob.
    fn denying_bob(tools: &str) -> Catalog {
        use crate::governance::{Effect, Rule};
        let policy = Policy {
            default: Effect::Allow,
            rules: vec![Rule {
                effect: Effect::Deny,
                identities: vec!["bob".into()],
                tools: vec![tools.into()],
                ..Rule::default()
            }],
        };
        let c = Catalog::new(
            vec![("a".into(), "a__".into(), Exposure::default())],
            100,
            Some(Arc::new(policy)),
        );
        c.set_lists(0, Some(lists(&["echo", "secret"])));
        c
    }

    #[test]
    fn each_identity_sees_what_the_policy_lets_it_use_until_the_catalogue_changes() {
        use crate::call::IdentityKind;
        let c = denying_bob("a__secret*");
        let bob = Identity::named(IdentityKind::ApiKey, "bob", vec![]);
        let anyone = Identity::anonymous();
        let names = |v: &View| -> Vec<String> {
            v.list(ListKind::Tools)
                .iter()
                .map(|t| t.to_value()["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        let first = c.view_for(&bob, Era::Handshake);
        assert_eq!(names(&first), ["a__echo"]);
        assert!(first.tool("a__secret").is_none());
        assert_eq!(
            names(&c.view_for(&anyone, Era::Handshake)),
            ["a__echo", "a__secret"]
        );
        // Kept while the catalogue stays the same.
        assert!(Arc::ptr_eq(&first, &c.view_for(&bob, Era::Handshake)));
        assert!(matches!(
            c.refusal(&bob, Era::Handshake, ItemKind::Tool, "a__secret"),
            Some(RouteError::Denied { rule: Some(0), .. })
        ));
        assert!(c
            .refusal(&bob, Era::Handshake, ItemKind::Tool, "a__nope")
            .is_none());
        assert!(c
            .refusal(&anyone, Era::Handshake, ItemKind::Tool, "a__secret")
            .is_none());
        // A change of the catalogue makes new views.
        c.set_lists(0, Some(lists(&["echo", "secret", "secret2", "more"])));
        let second = c.view_for(&bob, Era::Handshake);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(names(&second), ["a__echo", "a__more"]);
        let page = c
            .page(ListKind::Tools, None, &bob, Era::Handshake, &|_| true, &[])
            .unwrap()
            .into_value();
        assert_eq!(page["tools"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn an_identitys_views_are_kept_per_era() {
        use crate::call::IdentityKind;
        use crate::governance::{Effect, Rule};
        let policy = Policy {
            default: Effect::Allow,
            rules: vec![Rule {
                effect: Effect::Deny,
                identities: vec!["bob".into()],
                tools: vec!["a__secret".into()],
                ..Rule::default()
            }],
        };
        let c = Catalog::new(
            vec![
                ("a".into(), "a__".into(), Exposure::default()),
                ("a".into(), "a__".into(), Exposure::default()),
            ],
            100,
            Some(Arc::new(policy)),
        );
        c.pair_eras(0, 1);
        c.set_lists(0, Some(lists(&["echo", "secret"])));
        c.set_lists(1, Some(lists(&["echo", "secret", "needs_input"])));
        let bob = Identity::named(IdentityKind::ApiKey, "bob", vec![]);
        let names = |era: Era| -> Vec<String> {
            c.view_for(&bob, era)
                .list(ListKind::Tools)
                .iter()
                .map(|t| t.to_value()["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        for _ in 0..2 {
            assert_eq!(names(Era::Handshake), ["a__echo"]);
            assert_eq!(names(Era::Modern), ["a__echo", "a__needs_input"]);
        }
        let modern = c.view_for(&bob, Era::Modern);
        assert!(Arc::ptr_eq(&modern, &c.view_for(&bob, Era::Modern)));
        assert!(!Arc::ptr_eq(&modern, &c.view_for(&bob, Era::Handshake)));
    }

    #[test]
    fn a_denied_tool_of_a_source_that_is_down_is_as_unknown_as_any() {
        use crate::call::IdentityKind;
        let c = denying_bob("a__secret");
        c.set_lists(0, None);
        let bob = Identity::named(IdentityKind::ApiKey, "bob", vec![]);
        assert_eq!(
            c.view_for(&bob, Era::Handshake).unavailable("a__echo"),
            Some(0)
        );
        assert_eq!(
            c.view_for(&bob, Era::Handshake).unavailable("a__secret"),
            None
        );
        assert_eq!(c.view().unavailable("a__secret"), Some(0));
    }

    #[test]
    fn tool_name_rule() {
        assert!(is_valid_tool_name("everything__get-sum"));
        assert!(is_valid_tool_name("a.b_c-d"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("has space"));
        assert!(!is_valid_tool_name(&"x".repeat(129)));
    }
}
