//! The exposure stage: between what a source reports and what clients see,
//! per source, which tools and prompts are offered, under which name, and
//! which stay callable without being listed.

use std::collections::HashMap;

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

impl Exposure {
    /// Whether `tools/list` shows an offered tool, by the listing; the
    /// source's `default_listing` says what `Default` means (`None`: all).
    pub(crate) fn lists_tool(&self, name: &str, default_listing: Option<&[String]>) -> bool {
        match &self.listing {
            Listing::All => true,
            Listing::None => false,
            Listing::Only(patterns) => patterns.iter().any(|p| matches(p, name)),
            Listing::Default => default_listing.is_none_or(|p| p.iter().any(|p| matches(p, name))),
        }
    }

    /// The `Only` patterns that match none of these names.
    pub(crate) fn unmatched<'a>(
        &self,
        names: impl Iterator<Item = &'a str> + Clone,
    ) -> Vec<String> {
        let Listing::Only(patterns) = &self.listing else {
            return Vec::new();
        };
        patterns
            .iter()
            .filter(|p| !names.clone().any(|n| matches(p, n)))
            .cloned()
            .collect()
    }
}

/// Matches a name against a name or glob (`*`, `?`).
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
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
        assert!(with(Listing::Default).lists_tool("x", None));
        assert!(!with(Listing::Default).lists_tool("x", Some(&curated)));
        assert!(with(Listing::Default).lists_tool("chat", Some(&curated)));
        assert!(with(Listing::All).lists_tool("x", Some(&curated)));
        assert!(!with(Listing::None).lists_tool("x", None));
        let only = with(Listing::Only(vec![
            "get-*".into(),
            "echo".into(),
            "nope".into(),
        ]));
        assert!(only.lists_tool("get-sum", None));
        assert!(!only.lists_tool("add", None));
        assert_eq!(
            only.unmatched(["echo", "get-sum"].into_iter()),
            vec!["nope".to_owned()]
        );
    }
}
