//! What a reload of the configuration changes in the catalogue: sources
//! added and removed, another exposure for a source that stays, another
//! policy. Entries are only ever appended, so every index a route, a task
//! or a subscription holds stays valid; a removed source's entry stays
//! empty.

use std::sync::Arc;

use super::build::{Entry, Pairing};
use super::{Catalog, Exposure};
use crate::call::ListKind;
use crate::governance::Policy;

impl Catalog {
    /// Adds the entry of a source added at run time; its index. Its items
    /// join the lists at its first report.
    pub(crate) fn add_source(&self, name: String, prefix: String, exposure: Exposure) -> usize {
        let mut entries = self.entries.write().expect("catalog lock poisoned");
        entries.push(Entry::new(name, prefix, exposure));
        entries.len() - 1
    }

    /// Empties entry `index` for good: its source was removed. Returns the
    /// kinds of list that changed.
    pub(crate) fn remove_source(&self, index: usize) -> Vec<ListKind> {
        let mut entries = self.entries.write().expect("catalog lock poisoned");
        let Some(entry) = entries.get_mut(index) else {
            return Vec::new();
        };
        entry.lists = None;
        entry.up = false;
        // Its other era's entry, if any, is removed on its own; neither
        // stands in for the other any more.
        entry.pairing = Pairing::Alone;
        self.rebuild(&mut entries, index)
    }

    /// Gives source `index` another exposure (what is offered, under which
    /// names, what is listed). Returns the kinds of list that changed.
    pub(crate) fn set_exposure(&self, index: usize, exposure: Exposure) -> Vec<ListKind> {
        let mut entries = self.entries.write().expect("catalog lock poisoned");
        let Some(entry) = entries.get_mut(index) else {
            return Vec::new();
        };
        if entry.exposure == exposure {
            return Vec::new();
        }
        entry.exposure = exposure;
        self.rebuild(&mut entries, index)
    }

    /// The policy the lists are filtered by, if any.
    pub(crate) fn policy(&self) -> Option<Arc<Policy>> {
        self.policy.read().expect("catalog lock poisoned").clone()
    }

    /// Filters the lists by another policy from now on (`None`: by none).
    /// Every identity's view is made again at its next request.
    pub(crate) fn set_policy(&self, policy: Option<Arc<Policy>>) {
        *self.policy.write().expect("catalog lock poisoned") = policy.filter(|p| !p.allows_all());
        // After the policy is written: a view made with the old one is
        // then either refused by `view_for` or cleared here.
        self.views.lock().expect("catalog lock poisoned").clear();
    }
}
