//! Resource subscriptions of many clients over one upstream connection.
//!
//! An upstream is subscribed to a URI while at least one session is, so one
//! client unsubscribing never silences another; its
//! `notifications/resources/updated` go to the subscribed sessions only; and
//! the URIs are subscribed again when the upstream reconnects or renews its
//! session (the server forgot them).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Who is subscribed to what: (catalogue source, URI) → session ids.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    by_resource: Mutex<HashMap<(usize, String), HashSet<String>>>,
}

impl Subscriptions {
    fn map(&self) -> MutexGuard<'_, HashMap<(usize, String), HashSet<String>>> {
        // Every update leaves the map consistent: a poisoned lock is usable.
        self.by_resource
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `session` as subscribed. Returns true when it is the first
    /// subscriber, and the upstream must be asked.
    pub(crate) fn add(&self, source: usize, uri: &str, session: &str) -> bool {
        let mut map = self.map();
        let sessions = map.entry((source, uri.to_owned())).or_default();
        let first = sessions.is_empty();
        sessions.insert(session.to_owned());
        first
    }

    /// Forgets `session`'s subscription. Returns true when nobody is left
    /// and the upstream must be told.
    pub(crate) fn remove(&self, source: usize, uri: &str, session: &str) -> bool {
        let mut map = self.map();
        let key = (source, uri.to_owned());
        let Some(sessions) = map.get_mut(&key) else {
            return false;
        };
        if !sessions.remove(session) {
            return false;
        }
        let last = sessions.is_empty();
        if last {
            map.remove(&key);
        }
        last
    }

    /// Forgets every subscription of a session that ended; returns what no
    /// session is subscribed to any more.
    pub(crate) fn remove_session(&self, session: &str) -> Vec<(usize, String)> {
        let mut map = self.map();
        let mut orphaned = Vec::new();
        map.retain(|key, sessions| {
            if sessions.remove(session) && sessions.is_empty() {
                orphaned.push(key.clone());
                return false;
            }
            true
        });
        orphaned
    }

    /// The sessions subscribed to `uri` at `source`.
    pub(crate) fn subscribers(&self, source: usize, uri: &str) -> Vec<String> {
        self.map()
            .get(&(source, uri.to_owned()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every URI someone is subscribed to at `source`.
    pub(crate) fn uris(&self, source: usize) -> Vec<String> {
        self.map()
            .keys()
            .filter(|(s, _)| *s == source)
            .map(|(_, uri)| uri.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Subscriptions;

    #[test]
    fn the_upstream_is_asked_for_the_first_and_told_after_the_last() {
        let subs = Subscriptions::default();
        assert!(subs.add(1, "file:///a", "s1"), "first subscriber");
        assert!(!subs.add(1, "file:///a", "s2"));
        assert!(!subs.add(1, "file:///a", "s2"), "again: still not first");
        assert!(subs.add(2, "file:///a", "s1"), "another source is separate");
        assert!(!subs.remove(1, "file:///a", "s1"), "s2 is still subscribed");
        assert_eq!(subs.subscribers(1, "file:///a"), ["s2"]);
        assert!(!subs.remove(1, "file:///a", "s9"), "never subscribed");
        assert!(subs.remove(1, "file:///a", "s2"), "the last one left");
        assert!(subs.subscribers(1, "file:///a").is_empty());
        assert_eq!(subs.uris(2), ["file:///a"]);
    }

    #[test]
    fn an_ended_session_leaves_what_only_it_watched() {
        let subs = Subscriptions::default();
        subs.add(1, "file:///a", "s1");
        subs.add(1, "file:///b", "s1");
        subs.add(1, "file:///b", "s2");
        let mut orphaned = subs.remove_session("s1");
        orphaned.sort();
        assert_eq!(orphaned, [(1, "file:///a".to_owned())]);
        assert_eq!(subs.uris(1), ["file:///b"]);
    }
}
