//! The registry of live downstream sessions, shared by the gateway and the
//! upstream supervisors (which broadcast list changes to every client).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcpyard_proto::{methods, Message};
use serde_json::Value;

use super::listen::Listener;
use super::subscriptions::Subscriptions;
use crate::{Outbound, RouteError, Session};

/// How many sessions may live at once, in all and per identity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionCaps {
    pub(crate) total: usize,
    pub(crate) per_identity: usize,
}

/// Every session is in use and the registry is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtCapacity;

/// Hands a message for a client whose stream this replica does not hold
/// to the replica that holds it (shared state).
pub(crate) type ElsewhereSink = Arc<dyn Fn(&str, &Message) + Send + Sync>;

/// Tells the other replicas that a list changed here (the notification's
/// method), for the streams they hold (shared state).
pub(crate) type ListChangeSink = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
pub(crate) struct Sessions {
    /// By id. Hashed with foldhash (seeded per map), not SipHash: it is
    /// read on every request, and the ids are made here, not by clients.
    map: RwLock<foldhash::HashMap<String, Arc<Session>>>,
    elsewhere: RwLock<Option<ElsewhereSink>>,
    list_changes_elsewhere: RwLock<Option<ListChangeSink>>,
    /// Which sessions (and listen streams) watch which upstream resources.
    pub(crate) subscriptions: Subscriptions,
    /// Open `subscriptions/listen` streams, by subscriber key.
    listeners: RwLock<HashMap<String, Arc<Listener>>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("sessions", &self.len())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// Where a shared session's messages go when this replica holds no
    /// stream of it.
    pub(crate) fn send_elsewhere_with(&self, sink: ElsewhereSink) {
        *self.elsewhere.write().expect("sessions lock poisoned") = Some(sink);
    }

    /// Where the list changes heard here go for the other replicas.
    pub(crate) fn tell_list_changes_with(&self, sink: ListChangeSink) {
        *self
            .list_changes_elsewhere
            .write()
            .expect("sessions lock poisoned") = Some(sink);
    }

    /// Sends `msg` on `session`'s stream; a shared session whose stream is
    /// held by another replica gets it there (or, while none holds it, in
    /// the stream's replay log).
    pub(crate) fn notify(&self, session: &Session, msg: Message) {
        match self.sink_for(session) {
            Some(sink) => sink(session.id(), &msg),
            None => {
                session.notify(msg, None);
            }
        }
    }

    /// Where `session`'s messages go when another replica holds its
    /// stream (or none does): `None` when this replica holds it, or the
    /// session is this process's alone.
    fn sink_for(&self, session: &Session) -> Option<ElsewhereSink> {
        if !session.is_shared() || session.has_stream() {
            return None;
        }
        self.elsewhere
            .read()
            .expect("sessions lock poisoned")
            .clone()
    }

    /// Sends a request to `session`'s client and waits for its answer: on
    /// `related` when open, else on the session's stream, which for a
    /// shared session may be held by another replica (the answer, posted
    /// to any replica, comes back here).
    pub(crate) async fn request_client(
        &self,
        session: &Session,
        method: &str,
        params: Option<Value>,
        related: Option<&Outbound>,
        timeout: Duration,
    ) -> Result<Value, RouteError> {
        let sink = related
            .is_none_or(|r| r.is_closed())
            .then(|| self.sink_for(session))
            .flatten();
        match sink {
            Some(sink) => {
                tracing::debug!(method, "asked a client on the stream another replica holds");
                session
                    .ask_client(method, params, timeout, |request| {
                        sink(session.id(), &request);
                        std::future::ready(true)
                    })
                    .await
            }
            None => {
                session
                    .request_client(method, params, related, timeout)
                    .await
            }
        }
    }

    /// Inserts `session` while its identity has fewer than
    /// `caps.per_identity` sessions and the registry fewer than
    /// `caps.total`. At a cap an idle session (not `in_use` by the caller's
    /// own measure) is removed to make room and returned, for the caller to
    /// end: the identity's own least recently active one at its cap, else
    /// one of the identity that holds most sessions, so that nobody's
    /// sessions are pushed out by another's flood. When none is idle
    /// nothing changes and the session is refused.
    ///
    /// Count, eviction and insertion happen under one write lock, so
    /// concurrent calls can never take the registry past a cap.
    pub(crate) fn insert_within(
        &self,
        caps: SessionCaps,
        session: Arc<Session>,
        in_use: impl Fn(&str) -> bool,
    ) -> Result<Option<Arc<Session>>, AtCapacity> {
        let mut map = self.map.write().expect("sessions lock poisoned");
        let identity = session.identity();
        let oldest_idle = |of: &dyn Fn(&Session) -> bool| -> Option<String> {
            map.values()
                .filter(|s| of(s) && !in_use(s.id()))
                .filter_map(|s| Some((s.idle_for()?, s)))
                .max_by_key(|(idle, _)| *idle)
                .map(|(_, s)| s.id().to_owned())
        };
        let own = map.values().filter(|s| s.belongs_to(&identity)).count();
        let victim = if own >= caps.per_identity {
            Some(oldest_idle(&|s| s.belongs_to(&identity)).ok_or(AtCapacity)?)
        } else if map.len() >= caps.total {
            let mut counts: HashMap<String, (usize, crate::Identity)> = HashMap::new();
            for s in map.values() {
                let holder = s.identity();
                counts
                    .entry(holder.qualified_name())
                    .or_insert((0, holder))
                    .0 += 1;
            }
            let mut by_size: Vec<_> = counts.into_values().collect();
            by_size.sort_by_key(|(count, _)| std::cmp::Reverse(*count));
            let victim = by_size
                .iter()
                .find_map(|(_, holder)| oldest_idle(&|s| s.belongs_to(holder)));
            Some(victim.ok_or(AtCapacity)?)
        } else {
            None
        };
        let evicted = victim.and_then(|id| map.remove(&id));
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

    /// Sends a list change to every session that has a stream, and to the
    /// listen streams that asked for it, without waiting: a client too slow
    /// to drain its stream misses it rather than stalling the gateway. The
    /// other replicas are told too, for the streams they hold: with an
    /// upstream of its own per replica (a stdio child), a change that a
    /// call through one replica made is heard by that replica alone.
    pub(crate) fn broadcast(&self, msg: &Message) {
        self.deliver_list_change(msg, false);
        let sink = self
            .list_changes_elsewhere
            .read()
            .expect("sessions lock poisoned")
            .clone();
        if let (Some(sink), Some(method)) = (sink, msg.method()) {
            sink(method);
        }
    }

    /// A list change another replica heard: sent on the streams this
    /// replica holds (a session whose stream another replica holds gets it
    /// there, from that replica).
    pub(crate) fn list_changed_elsewhere(&self, method: &str) {
        if !matches!(
            method,
            methods::NOTIFICATION_TOOLS_LIST_CHANGED
                | methods::NOTIFICATION_PROMPTS_LIST_CHANGED
                | methods::NOTIFICATION_RESOURCES_LIST_CHANGED
        ) {
            return;
        }
        self.deliver_list_change(&Message::notification(method, None), true);
    }

    fn deliver_list_change(&self, msg: &Message, held_streams_only: bool) {
        let sessions: Vec<_> = self
            .map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .filter(|s| !held_streams_only || s.has_stream())
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
                self.notify(&session, msg.clone());
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

    /// Sends a log notification to every session whose level admits it and
    /// that `audience` accepts.
    pub(crate) fn broadcast_log(
        &self,
        msg: &Message,
        level: &str,
        audience: impl Fn(&Session) -> bool,
    ) {
        let sessions: Vec<_> = self
            .map
            .read()
            .expect("sessions lock poisoned")
            .values()
            .filter(|s| s.wants_log(level) && audience(s))
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
    use crate::{Identity, IdentityKind};

    fn caps(total: usize) -> SessionCaps {
        SessionCaps {
            total,
            per_identity: total,
        }
    }

    #[test]
    fn concurrent_inserts_never_pass_the_cap() {
        const CAP: usize = 5;
        let sessions = Arc::new(Sessions::default());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let sessions = sessions.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let admitted =
                            sessions.insert_within(caps(CAP), Session::new(None), |_| false);
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
            sessions.insert_within(caps(1), kept.clone(), |_| false),
            Ok(None)
        ));
        let refused = sessions.insert_within(caps(1), Session::new(None), |id| id == kept.id());
        assert_eq!(refused.err(), Some(AtCapacity));
        assert!(sessions.get(kept.id()).is_some());
        assert_eq!(sessions.len(), 1);

        let evicted = sessions
            .insert_within(caps(1), Session::new(None), |_| false)
            .expect("the idle one makes room");
        assert_eq!(
            evicted.map(|s| s.id().to_owned()),
            Some(kept.id().to_owned())
        );
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn one_identity_at_its_cap_makes_room_from_its_own_sessions_only() {
        let sessions = Sessions::default();
        let caps = SessionCaps {
            total: 10,
            per_identity: 3,
        };
        let as_key =
            |name: &str| Session::new_as(Identity::named(IdentityKind::ApiKey, name, vec![]), None);
        let alice = as_key("alice");
        alice.touch();
        sessions
            .insert_within(caps, alice.clone(), |_| false)
            .unwrap();
        for _ in 0..20 {
            let flood = as_key("mallory");
            flood.touch();
            sessions.insert_within(caps, flood, |_| false).unwrap();
        }
        assert!(
            sessions.get(alice.id()).is_some(),
            "alice's session survives"
        );
        assert_eq!(sessions.len(), 4);
        // At the total cap, the identity holding most gives way.
        let caps = SessionCaps {
            total: 4,
            per_identity: 4,
        };
        let bob = as_key("bob");
        let evicted = sessions.insert_within(caps, bob, |_| false).unwrap();
        let evicted = evicted.expect("room made");
        assert_eq!(evicted.identity().name, "mallory");
        assert!(sessions.get(alice.id()).is_some());
    }
}
