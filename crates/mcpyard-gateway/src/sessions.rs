//! The registry of live downstream sessions, shared by the gateway and the
//! upstream supervisors (which broadcast list changes to every client).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpyard_proto::Message;

use crate::listen::Listener;
use crate::subscriptions::Subscriptions;
use crate::Session;

#[derive(Debug, Default)]
pub(crate) struct Sessions {
    map: RwLock<HashMap<String, Arc<Session>>>,
    /// Which sessions (and listen streams) watch which upstream resources.
    pub(crate) subscriptions: Subscriptions,
    /// Open `subscriptions/listen` streams, by subscriber key.
    listeners: RwLock<HashMap<String, Arc<Listener>>>,
}

impl Sessions {
    pub(crate) fn insert(&self, session: Arc<Session>) {
        self.map
            .write()
            .expect("sessions lock poisoned")
            .insert(session.id().to_owned(), session);
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

    /// The idle session unused for longest, if any.
    pub(crate) fn most_idle(&self, in_use: impl Fn(&str) -> bool) -> Option<String> {
        self.map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .filter(|s| !in_use(s.id()))
            .filter_map(|s| Some((s.idle_for()?, s)))
            .max_by_key(|(idle, _)| *idle)
            .map(|(_, s)| s.id().to_owned())
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
            s.try_notify(msg.clone());
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
                session.try_notify(msg.clone());
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
            s.try_notify(msg.clone());
        }
    }
}
