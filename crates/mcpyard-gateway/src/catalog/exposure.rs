//! The exposure stage: between what a source reports and what clients see,
//! per source, which tools and prompts are offered, under which name, and
//! which stay callable without being listed.

use std::collections::HashMap;

use foldhash::{HashSet, HashSetExt};

/// What a source's tools look like in `tools/list` (the `expose` setting);
/// tools not listed stay callable and are found through the search tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Listing {
    /// What the source suggests (see `SourceLists::set_default_listing`):
    /// every tool for MCP servers and the local models, a curated set or
    /// none for large APIs.
    #[default]
    Default,
    /// Every tool (`"*"`).
    All,
    /// No tool directly (`"none"`).
    None,
    /// Names or patterns (own, unprefixed names; `*` globs).
    Only(Vec<String>),
}

/// One source's exposure rules. Names are the source's own (unprefixed);
/// a pattern may hold `*` (any run of characters) and `?` (any one). The
/// default offers everything under its own name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposure {
    /// When set, only names matching one of these are offered.
    pub allow: Option<Vec<String>>,
    /// Names never offered, nor callable.
    pub deny: Vec<String>,
    /// Names callable but left out of the lists (found by search).
    pub hidden: Vec<String>,
    /// A source's name → the name clients see (before the prefix).
    pub rename: HashMap<String, String>,
    /// Which of the allowed tools `tools/list` shows.
    pub listing: Listing,
}

/// What the stage decides for one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Listed(String),
    Hidden(String),
    Denied,
}

impl Exposure {
    pub(crate) fn decide(&self, name: &str) -> Decision {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|patterns| patterns.iter().any(|p| matches(p, name)));
        if !allowed || self.deny.iter().any(|p| matches(p, name)) {
            return Decision::Denied;
        }
        let exposed = self
            .rename
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned());
        if self.hidden.iter().any(|p| matches(p, name)) {
            Decision::Hidden(exposed)
        } else {
            Decision::Listed(exposed)
        }
    }
}

/// Names and globs, ready to match many names: exact names hashed, so a
/// long `expose` list over a large source stays linear.
#[derive(Debug, Default)]
pub(crate) struct NameSet<'a> {
    exact: HashSet<&'a str>,
    globs: Vec<&'a str>,
}

impl<'a> NameSet<'a> {
    pub(crate) fn new(patterns: &'a [String]) -> Self {
        let mut set = Self::default();
        for p in patterns {
            if p.contains(['*', '?']) {
                set.globs.push(p);
            } else {
                set.exact.insert(p);
            }
        }
        set
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.exact.contains(name) || self.globs.iter().any(|g| matches(g, name))
    }
}

/// What `tools/list` shows of one source's offered tools, decided once
/// per catalogue change.
#[derive(Debug)]
pub(crate) enum ListingRule<'a> {
    All,
    Nothing,
    Only(NameSet<'a>),
}

impl<'a> ListingRule<'a> {
    pub(crate) fn lists(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Nothing => false,
            Self::Only(set) => set.contains(name),
        }
    }
}

impl Exposure {
    /// The rule for `tools/list`; the source's `default_listing` says what
    /// `Default` means (`None`: all).
    pub(crate) fn listing_rule<'a>(
        &'a self,
        default_listing: Option<&'a [String]>,
    ) -> ListingRule<'a> {
        match (&self.listing, default_listing) {
            (Listing::All, _) | (Listing::Default, None) => ListingRule::All,
            (Listing::None, _) => ListingRule::Nothing,
            (Listing::Only(patterns), _) => ListingRule::Only(NameSet::new(patterns)),
            (Listing::Default, Some(patterns)) => ListingRule::Only(NameSet::new(patterns)),
        }
    }

    /// The `Only` names and patterns that match none of these names.
    pub(crate) fn unmatched<'a>(&self, names: impl Iterator<Item = &'a str>) -> Vec<String> {
        let Listing::Only(patterns) = &self.listing else {
            return Vec::new();
        };
        // What is still unmatched, struck off name by name: the patterns
        // are hashed rather than the (often many more) names.
        let mut globs = Vec::new();
        let mut exact = HashSet::with_capacity(patterns.len());
        for p in patterns {
            if p.contains(['*', '?']) {
                globs.push(p.as_str());
            } else {
                exact.insert(p.as_str());
            }
        }
        for name in names {
            if exact.is_empty() && globs.is_empty() {
                break;
            }
            exact.remove(name);
            globs.retain(|g| !matches(g, name));
        }
        patterns
            .iter()
            .filter(|p| exact.contains(p.as_str()) || globs.contains(&p.as_str()))
            .cloned()
            .collect()
    }
}

/// Matches a name against a name or glob (`*` any run of characters, `?`
/// any one): the one glob of exposure, policy, limits, guardrails and
/// `mcpyard audit`.
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.contains(['*', '?']) {
        super::search::glob_matches(pattern, name)
    } else {
        pattern == name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_lists_everything_under_its_own_name() {
        assert_eq!(
            Exposure::default().decide("echo"),
            Decision::Listed("echo".into())
        );
    }

    #[test]
    fn allow_deny_hidden_and_rename_apply_in_that_order() {
        let exposure = Exposure {
            allow: Some(vec!["get_*".into(), "echo".into()]),
            deny: vec!["get_secret".into()],
            hidden: vec!["get_big*".into()],
            rename: HashMap::from([("echo".into(), "say".into())]),
            ..Exposure::default()
        };
        assert_eq!(exposure.decide("delete_all"), Decision::Denied);
        assert_eq!(exposure.decide("get_secret"), Decision::Denied);
        assert_eq!(
            exposure.decide("get_bigfile"),
            Decision::Hidden("get_bigfile".into())
        );
        assert_eq!(
            exposure.decide("get_time"),
            Decision::Listed("get_time".into())
        );
        assert_eq!(exposure.decide("echo"), Decision::Listed("say".into()));
    }

    #[test]
    fn listings_choose_what_tools_list_shows() {
        let with = |listing| Exposure {
            listing,
            ..Exposure::default()
        };
        let curated = ["chat".to_owned()];
        assert!(with(Listing::Default).listing_rule(None).lists("x"));
        assert!(!with(Listing::Default)
            .listing_rule(Some(&curated))
            .lists("x"));
        assert!(with(Listing::Default)
            .listing_rule(Some(&curated))
            .lists("chat"));
        assert!(with(Listing::All).listing_rule(Some(&curated)).lists("x"));
        assert!(!with(Listing::None).listing_rule(None).lists("x"));
        let only = with(Listing::Only(vec![
            "get-*".into(),
            "echo".into(),
            "nope".into(),
        ]));
        assert!(only.listing_rule(None).lists("get-sum"));
        assert!(!only.listing_rule(None).lists("add"));
        assert_eq!(
            only.unmatched(["echo", "get-sum"].into_iter()),
            vec!["nope".to_owned()]
        );
        // In the list's order, globs among names.
        assert_eq!(
            only.unmatched(["add"].into_iter()),
            ["get-*", "echo", "nope"]
        );
        assert!(with(Listing::All).unmatched(["x"].into_iter()).is_empty());
    }
}
