//! The registry of live downstream sessions, shared by the gateway and the
//! upstream supervisors (which broadcast list changes to every client).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpyard_proto::Message;

use super::listen::Listener;
use super::subscriptions::Subscriptions;
use crate::Session;

/// Every session is in use and the registry is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtCapacity;

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: RwLock<HashMap<String, Arc<Session>>>,
    /// Which sessions (and listen streams) watch which upstream resources.
    pub(crate) subscriptions: Subscriptions,
    /// Open `subscriptions/listen` streams, by subscriber key.
    listeners: RwLock<HashMap<String, Arc<Listener>>>,
}

impl Sessions {
    /// Inserts `session` while fewer than `cap` are live. At `cap`, the idle
    /// session unused for longest (and not `in_use` by the caller's own
    /// measure) is removed to make room and returned, for the caller to end;
    /// when none is idle nothing changes and the session is refused.
    ///
    /// Count, eviction and insertion happen under one write lock, so
    /// concurrent calls can never take the registry past `cap`.
    pub(crate) fn insert_within(
        &self,
        cap: usize,
        session: Arc<Session>,
        in_use: impl Fn(&str) -> bool,
    ) -> Result<Option<Arc<Session>>, AtCapacity> {
        let mut map = self.map.write().expect("sessions lock poisoned");
        let evicted = if map.len() >= cap {
            let oldest = map
                .values()
                .filter(|s| !in_use(s.id()))
                .filter_map(|s| Some((s.idle_for()?, s)))
                .max_by_key(|(idle, _)| *idle)
                .map(|(_, s)| s.id().to_owned())
                .ok_or(AtCapacity)?;
            map.remove(&oldest)
        } else {
            None
        };
        map.insert(session.id().to_owned(), session);
        Ok(evicted)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map
            .read()
            .expect("sessions lock poisoned")
            .get(id)
            .cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Session>> {
        self.map.write().expect("sessions lock poisoned").remove(id)
    }

    pub(crate) fn drain(&self) -> Vec<Arc<Session>> {
        self.map
            .write()
            .expect("sessions lock poisoned")
            .drain()
            .map(|(_, s)| s)
            .collect()
    }

    /// Every live session, for the metrics.
    pub(crate) fn all(&self) -> Vec<Arc<Session>> {
        let map = self.map.read().expect("sessions lock poisoned");
        map.values().cloned().collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().expect("sessions lock poisoned").len()
    }

    /// The sessions idle (no stream, nothing in flight, and not `in_use`
    /// by the caller's own measure) for `limit` or longer.
    pub(crate) fn idle_since(&self, limit: Duration, in_use: impl Fn(&str) -> bool) -> Vec<String> {
        self.map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .filter(|s| s.idle_for().is_some_and(|idle| idle >= limit) && !in_use(s.id()))
            .map(|s| s.id().to_owned())
            .collect()
    }

    /// Sends a notification to every session that has a stream, and to the
    /// listen streams that asked for it, without waiting: a client too slow
    /// to drain its stream misses it rather than stalling the gateway.
    pub(crate) fn broadcast(&self, msg: &Message) {
        let sessions: Vec<_> = self
            .map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .cloned()
            .collect();
        for s in sessions {
            s.notify(msg.clone(), None);
        }
        let method = msg.method().unwrap_or_default();
        for listener in self.listeners() {
            if listener.filter.wants_list_change(method) {
                listener.deliver(msg);
            }
        }
    }

    fn listeners(&self) -> Vec<Arc<Listener>> {
        self.listeners
            .read()
            .expect("sessions lock poisoned")
            .values()
            .cloned()
            .collect()
    }

    pub(crate) fn add_listener(&self, key: &str, listener: Arc<Listener>) {
        self.listeners
            .write()
            .expect("sessions lock poisoned")
            .insert(key.to_owned(), listener);
    }

    pub(crate) fn remove_listener(&self, key: &str) {
        self.listeners
            .write()
            .expect("sessions lock poisoned")
            .remove(key);
    }
}

impl Sessions {
    /// Sends a `notifications/resources/updated` of `source` to the sessions
    /// subscribed to its URI, without waiting.
    pub(crate) fn notify_subscribers(&self, source: usize, uri: &str, msg: &Message) {
        for id in self.subscriptions.subscribers(source, uri) {
            if let Some(session) = self.get(&id) {
                session.notify(msg.clone(), None);
            } else if let Some(listener) = self
                .listeners
                .read()
                .expect("sessions lock poisoned")
                .get(&id)
            {
                listener.deliver(msg);
            }
        }
    }

    /// Sends a log notification to every session whose level admits it.
    pub(crate) fn broadcast_log(&self, msg: &Message, level: &str) {
        let sessions: Vec<_> = self
            .map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .filter(|s| s.wants_log(level))
            .cloned()
            .collect();
        for s in sessions {
            s.notify(msg.clone(), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_inserts_never_pass_the_cap() {
        const CAP: usize = 5;
        let sessions = Arc::new(Sessions::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let sessions = sessions.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let admitted = sessions.insert_within(CAP, Session::new(None), |_| false);
                        assert!(admitted.is_ok(), "idle sessions can always make room");
                        assert!(sessions.len() <= CAP, "{} live", sessions.len());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("inserting thread");
        }
        assert_eq!(sessions.len(), CAP);
    }

    #[test]
    fn a_full_registry_of_sessions_in_use_refuses_and_keeps_them() {
        let sessions = Sessions::default();
        let kept = Session::new(None);
        assert!(matches!(
            sessions.insert_within(1, kept.clone(), |_| false),
            Ok(None)
        ));
        let refused = sessions.insert_within(1, Session::new(None), |id| id == kept.id());
        assert_eq!(refused.err(), Some(AtCapacity));
        assert!(sessions.get(kept.id()).is_some());
        assert_eq!(sessions.len(), 1);

        let evicted = sessions
            .insert_within(1, Session::new(None), |_| false)
            .expect("the idle one makes room");
        assert_eq!(
            evicted.map(|s| s.id().to_owned()),
            Some(kept.id().to_owned())
        );
        assert_eq!(sessions.len(), 1);
    }
}
