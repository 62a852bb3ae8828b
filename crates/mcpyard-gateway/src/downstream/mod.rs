//! Downstream: the clients' side of the gateway. Sessions and their
//! housekeeping (registration within a limit, idle expiry), resource
//! subscriptions shared over upstream connections, `subscriptions/listen`
//! streams, the stateless era's per-request sessions (`era.rs`) and its
//! multi-round-trip requests (`round_trips.rs`).

pub(crate) mod announce;
pub(crate) mod era;
mod listen;
mod replay;
pub(crate) mod round_trips;
mod session;
mod sessions;
mod subscriptions;

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpyard_proto::{codes, methods, ErrorObject, Message, RequestId};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub use replay::StreamRecorder;
pub(crate) use session::is_log_level;
pub use session::REPLAY_KEPT;
pub use session::{Negotiated, Outbound, Session};
pub(crate) use sessions::{SessionCaps, Sessions};

use crate::error::RouteError;
use crate::router::Router;
use crate::source::{ClientHandle, Progress, Source};
use crate::state::{SessionAdmission, StateBackend, StateEvent};
use listen::{ListenFilter, Listener, SUBSCRIPTION_ID};
use round_trips::RoundTrips;
use sessions::AtCapacity;

type Outcome = Result<Value, RouteError>;

#[derive(Debug)]
pub(crate) struct Downstream {
    pub(crate) sessions: Arc<Sessions>,
    router: Arc<Router>,
    /// Stateless-era calls waiting for their client's input.
    pub(crate) round_trips: RoundTrips,
    idle_timeout: Duration,
    caps: SessionCaps,
    stop: CancellationToken,
    /// Where sessions are recorded for the other replicas (see `state`).
    state: Arc<dyn StateBackend>,
    /// The shared store's generation last seen (see [`StateBackend::epoch`]).
    epoch: std::sync::Mutex<Option<String>>,
}

/// A source a subscription goes to, with its catalogue index.
type Target = (usize, Arc<dyn Source>);

impl Downstream {
    pub(crate) fn new(
        sessions: Arc<Sessions>,
        router: Arc<Router>,
        client_request_timeout: Duration,
        idle_timeout: Duration,
        caps: SessionCaps,
        stop: CancellationToken,
        state: Arc<dyn StateBackend>,
    ) -> Arc<Self> {
        let events = state.events();
        let downstream = Arc::new(Self {
            sessions,
            router,
            round_trips: RoundTrips::new(client_request_timeout),
            idle_timeout,
            caps,
            stop,
            state,
            epoch: std::sync::Mutex::default(),
        });
        tokio::spawn(expire_idle_sessions(Arc::downgrade(&downstream)));
        if downstream.state.shared() {
            // One queue, so that a client's messages keep their order.
            let (queue, mut queued) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
            let state = downstream.state.clone();
            tokio::spawn(async move {
                while let Some((session, text)) = queued.recv().await {
                    if let Err(e) = state.to_client(&session, &text, session::REPLAY_KEPT).await {
                        tracing::debug!(error = %e, "a message for a client on another replica was lost");
                    }
                }
            });
            downstream.sessions.send_elsewhere_with(Arc::new(
                move |session: &str, msg: &Message| {
                    if let Ok(text) = serde_json::to_string(msg) {
                        let _ = queue.send((session.to_owned(), text));
                    }
                },
            ));
            let state = downstream.state.clone();
            downstream
                .sessions
                .tell_list_changes_with(Arc::new(move |method: &str| {
                    let (state, method) = (state.clone(), method.to_owned());
                    tokio::spawn(async move {
                        if let Err(e) = state.list_changed(&method).await {
                            tracing::debug!(error = %e, "the other replicas were not told of a list change");
                        }
                    });
                }));
        }
        if let Some(events) = events {
            tokio::spawn(follow_replicas(Arc::downgrade(&downstream), events));
        }
        downstream
    }

    /// Numbers and logs what `session`'s GET stream writes, for a client
    /// that reconnects with `Last-Event-ID`; the log lives as long as the
    /// session.
    pub(crate) fn stream_recorder(&self, session: Arc<Session>) -> StreamRecorder {
        StreamRecorder::new(self.state.clone(), session, self.idle_timeout)
    }

    /// What `session`'s GET stream wrote after event `last` (see
    /// [`replay::after`]).
    pub(crate) async fn replay_after(
        &self,
        session: &Session,
        last: &str,
    ) -> Vec<(String, String)> {
        replay::after(self.state.as_ref(), session, last).await
    }

    /// How often a shared session's record is renewed while it is used.
    fn renew_every(&self) -> Duration {
        (self.idle_timeout / 8).clamp(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// Records `session` for the other replicas (shared state only), so
    /// that a request of its client that lands on another finds it. A
    /// session that could not be recorded is served here alone.
    /// Takes a new session on: counts it among the team's sessions under
    /// the caps (shared state), then records it for the other replicas.
    /// False when the team's caps are reached: the session is ended here.
    pub(crate) async fn admit(&self, session: &Session) -> bool {
        if self.state.shared() && !session.is_stateless() && !session.is_observer() {
            let owner = session.identity().qualified_name();
            let caps = (self.caps.total, self.caps.per_identity);
            match self
                .state
                .admit_session(session.id(), &owner, caps, self.idle_timeout)
                .await
            {
                Ok(SessionAdmission::Admitted) => {}
                Ok(refused) => {
                    tracing::warn!(
                        ?refused,
                        "refused a new session: the team's session caps are reached"
                    );
                    self.end(session.id());
                    return false;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a new session could not be counted among the team's")
                }
            }
        }
        self.share(session).await;
        true
    }

    pub(crate) async fn share(&self, session: &Session) {
        if !self.state.shared() || session.is_stateless() || session.is_observer() {
            return;
        }
        match self
            .state
            .save_session(session.id(), &session.record(), self.idle_timeout)
            .await
        {
            Ok(()) => {
                session.mark_shared();
                if self.seen_epoch().is_none() {
                    self.note_epoch().await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "a session could not be recorded for the other replicas: only this one serves it")
            }
        }
    }

    /// Records a change of a shared session (its log level) for the other
    /// replicas, whose copies of it take the change at once.
    pub(crate) async fn share_change(&self, session: &Session) {
        if !session.is_shared() {
            return;
        }
        if let Err(e) = self
            .state
            .update_session(session.id(), &session.record(), self.idle_timeout)
            .await
        {
            tracing::warn!(error = %e, "a session's change could not be recorded: the other replicas keep its former settings");
        }
    }

    /// The session with this id: this replica's, or one another replica
    /// opened (shared state), taken on here. Looking it up counts as using
    /// it; a shared one's record is renewed now and then, off the request.
    pub(crate) async fn find(&self, id: &str) -> Option<Arc<Session>> {
        if let Some(session) = self.session(id) {
            if session.shared_record_due(self.renew_every()) {
                let (state, id, ttl) = (self.state.clone(), id.to_owned(), self.idle_timeout);
                tokio::spawn(async move {
                    if let Err(e) = state.refresh_session(&id, ttl).await {
                        tracing::debug!(error = %e, "a shared session's record was not renewed");
                    }
                });
            }
            return Some(session);
        }
        if !self.state.shared() {
            return None;
        }
        let record = match self.state.load_session(id).await {
            Ok(record) => record?,
            Err(e) => {
                tracing::warn!(error = %e, "a session opened on another replica could not be looked up");
                return None;
            }
        };
        // The store's generation, when this replica has not noted it yet
        // (it made no session of its own): without it, a Redis that comes
        // back empty could not be told from one whose records were
        // deleted, and this copy would be ended instead of recorded again.
        if self.seen_epoch().is_none() {
            if let Ok(Some(now)) = self.state.epoch().await {
                *self.epoch.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            }
        }
        let session = Session::restore(id.to_owned(), &record);
        self.register(session.clone()).then_some(session)
    }

    /// Ends a session here and, with shared state, on every replica.
    /// Returns false when no replica knew it.
    pub(crate) async fn delete(&self, id: &str) -> bool {
        let here = self.end(id);
        if !self.state.shared() {
            return here;
        }
        match self.state.delete_session(id).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "a deleted session could not be removed for the other replicas: it lasts there until its record expires");
                here
            }
        }
    }

    /// Hands a client's message to the replica that waits for it: the
    /// answer to a request another replica relayed, or a cancellation of a
    /// call another replica runs (shared state only; see `follow_replicas`).
    pub(crate) async fn forward(&self, session: &Session, message: &Message) {
        let Ok(text) = serde_json::to_string(message) else {
            return;
        };
        if let Err(e) = self.state.forward(session.id(), &text).await {
            tracing::warn!(error = %e, "a client's message for another replica could not be handed on");
        }
    }

    /// A message another replica received for a session of this one: an
    /// answer to a request relayed from here, or a cancellation of a call
    /// running here. Never handed on again.
    fn take_forwarded(self: &Arc<Self>, session: &str, message: &str) {
        let (Some(session), Ok(message)) = (
            self.sessions.get(session),
            serde_json::from_str::<Message>(message),
        ) else {
            return;
        };
        tracing::debug!("took a client's message that reached another replica");
        match message {
            Message::Notification { method, params }
                if method == methods::NOTIFICATION_CANCELLED =>
            {
                if let Some(id) = cancelled_request(params.as_ref()) {
                    session.cancel_request(&id);
                }
            }
            // An unsubscribe made through another replica: this one drops
            // the session's subscription if it made it.
            Message::Request { method, params, .. } if method == methods::RESOURCES_UNSUBSCRIBE => {
                let downstream = self.clone();
                let client = ClientHandle {
                    session,
                    related: None,
                };
                let params = params.unwrap_or_default();
                tokio::spawn(async move {
                    let cancel = CancellationToken::new();
                    let _ = downstream
                        .change_subscription(&method, params, client, cancel)
                        .await;
                });
            }
            Message::Request { .. } => {}
            answer => deliver_answer(&session, answer),
        }
    }

    /// A client's answer (a response or an error) to one of the gateway's
    /// requests: delivered here when this replica waits for it, else handed
    /// to the one that relayed the request.
    pub(crate) async fn answer(&self, session: &Session, answer: Message) {
        let elsewhere = answer
            .id()
            .is_some_and(|id| session.is_shared() && !session.awaits(id));
        if elsewhere {
            self.forward(session, &answer).await;
        } else {
            deliver_answer(session, answer);
        }
    }

    /// Ends here the shared sessions no replica has a record of any more
    /// (deleted while this one was not listening), unless the store lost
    /// every record (restarted empty): then they are recorded again.
    async fn forget_deleted(&self) {
        let before = self.seen_epoch();
        let Some(now) = self.note_epoch().await else {
            // Nothing can be told apart without it: ending nothing is safe.
            return;
        };
        let lost = before.is_some_and(|b| b != now);
        if lost {
            tracing::warn!(
                "the shared state lost its records; this replica's sessions are recorded again"
            );
        }
        for session in self.sessions.all() {
            if session.is_shared()
                && matches!(self.state.load_session(session.id()).await, Ok(None))
            {
                if lost {
                    self.share(&session).await;
                } else {
                    self.end(session.id());
                }
            }
        }
    }

    /// A message another replica made for the client of `session`, whose
    /// stream this replica holds: sent on it. When the stream closed a
    /// moment ago (this replica's note that it holds it is not taken back
    /// yet), the message is logged for the client's reconnection instead.
    fn to_own_stream(&self, session: &str, message: &str) {
        let Some(session) = self.sessions.get(session) else {
            return;
        };
        if session.has_stream() {
            if let Ok(msg) = serde_json::from_str::<Message>(message) {
                tracing::debug!("sent a client the message another replica made for it");
                session.notify(msg, None);
            }
            return;
        }
        let (state, message, ttl) = (self.state.clone(), message.to_owned(), self.idle_timeout);
        tokio::spawn(async move {
            if let Err(e) = state
                .append_stream(session.id(), &message, session::REPLAY_KEPT, ttl)
                .await
            {
                tracing::debug!(error = %e, "a message for a client whose stream just closed was lost");
            }
        });
    }

    fn seen_epoch(&self) -> Option<String> {
        self.epoch.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Asks the store's generation (a few times, a second apart, while it
    /// does not answer) and keeps it.
    async fn note_epoch(&self) -> Option<String> {
        if !self.state.shared() {
            return None;
        }
        for attempt in 0..5 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            if let Ok(Some(now)) = self.state.epoch().await {
                *self.epoch.lock().unwrap_or_else(|e| e.into_inner()) = Some(now.clone());
                return Some(now);
            }
        }
        None
    }

    /// See [`crate::Gateway::register_session`].
    pub(crate) fn register(&self, session: Arc<Session>) -> bool {
        session.touch();
        let own_tasks = &self.router.own_tasks;
        match self
            .sessions
            .insert_within(self.caps, session, |id| own_tasks.has_tasks(id))
        {
            Ok(None) => true,
            Ok(Some(oldest)) => {
                // A session id is the client's credential for its session: never logged.
                tracing::info!("ended the least recently used idle session: at a session limit");
                self.retire(&oldest);
                true
            }
            Err(AtCapacity) => {
                tracing::warn!(
                    limit = self.caps.total,
                    per_identity = self.caps.per_identity,
                    "refused a new session: every session it could replace is in use"
                );
                false
            }
        }
    }

    /// The live session with this id; looking it up counts as using it.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.sessions.get(id)?;
        session.touch();
        Some(session)
    }

    /// Ends and forgets a session. Returns false when it was unknown.
    pub(crate) fn end(&self, id: &str) -> bool {
        match self.sessions.remove(id) {
            Some(s) => {
                self.retire(&s);
                true
            }
            None => false,
        }
    }

    /// Ends every session (shutdown).
    pub(crate) fn end_all(&self) {
        for s in self.sessions.drain() {
            s.end();
        }
    }

    /// Ends a session already taken out of the registry: its streams, its
    /// tasks and the subscriptions only it held.
    fn retire(&self, session: &Session) {
        session.end();
        self.router.own_tasks.end_owner(session.id());
        self.router.end_source_task_owner(session.id());
        self.unsubscribe_orphans(session.id());
    }

    /// Tells upstreams about the resources that only an ended subscriber (a
    /// session, or a listen stream) watched, in the background.
    fn unsubscribe_orphans(&self, subscriber: &str) {
        let orphaned = self.sessions.subscriptions.remove_session(subscriber);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for (source, uri) in orphaned {
            let Some(source) = self.router.source(source) else {
                continue;
            };
            runtime.spawn(async move {
                let params = json!({ "uri": uri });
                let unsubscribed = source
                    .request(methods::RESOURCES_UNSUBSCRIBE, params, None)
                    .await;
                if let Err(e) = unsubscribed {
                    tracing::debug!(server = %source.name(), error = %e, "unsubscribe after the session ended failed");
                }
            });
        }
    }

    /// `resources/subscribe` and `unsubscribe`. Several clients share one
    /// upstream connection, so the upstream is asked only for a URI's first
    /// subscriber and told only after its last (see `subscriptions`). A URI
    /// no source lists goes to every upstream that offers subscriptions, and
    /// succeeds when any accepts. Stateless requests, which have no stream
    /// to receive updates on, are passed on as they are.
    pub(crate) async fn change_subscription(
        &self,
        method: &str,
        params: Value,
        client: ClientHandle,
        cancel: CancellationToken,
    ) -> Outcome {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| RouteError::invalid_params("`uri` must be a string"))?
            .to_owned();
        let session = client.session.clone();
        let identity = session.identity();
        let context = self
            .router
            .context(client, identity, cancel, Progress::none());
        let (targets, listed) = self.subscription_targets(&uri);
        let subscriptions = &self.sessions.subscriptions;
        let tracked = !session.is_stateless();
        let subscribe = method == methods::RESOURCES_SUBSCRIBE;
        let mut accepted = None;
        let mut refused = None;
        for (source, target) in targets {
            let ask = !tracked
                || if subscribe {
                    subscriptions.add(source, &uri, session.id())
                } else {
                    subscriptions.remove(source, &uri, session.id())
                };
            let outcome = if ask {
                target.request(method, params.clone(), Some(&context)).await
            } else {
                Ok(json!({}))
            };
            match outcome {
                Ok(result) => accepted = Some(result),
                Err(e) => {
                    if tracked && subscribe {
                        subscriptions.remove(source, &uri, session.id());
                    }
                    refused.get_or_insert(e);
                }
            }
        }
        match (accepted, listed, refused) {
            (Some(result), _, _) => Ok(result),
            (None, false, _) => Err(RouteError::ResourceNotFound { uri }),
            (None, true, Some(e)) => Err(e),
            (None, true, None) => Err(RouteError::internal("no upstream to subscribe at")),
        }
    }

    /// Where a subscription to `uri` goes: the upstream that lists it or a
    /// template of it, else the one whose resources share its origin, else
    /// the one upstream that takes subscriptions at all (true); none for a
    /// URI no source can own (false: not found).
    fn subscription_targets(&self, uri: &str) -> (Vec<Target>, bool) {
        let view = self.router.catalog.view();
        let owner = view
            .resource_source(uri)
            .or_else(|| view.resource_owner(uri))
            .or_else(|| self.router.only_source_with("/resources/subscribe"));
        let target = owner.and_then(|s| Some((s, self.router.source(s)?)));
        match target {
            // A source without resources of its own (the gateway's) owns none.
            Some((index, source)) if source.offers("/resources") => (vec![(index, source)], true),
            _ => (Vec::new(), false),
        }
    }

    /// `subscriptions/listen` (2026-07-28; see `listen`): acknowledges on
    /// the request's own stream, registers the stream for the changes it
    /// asked for, subscribes the upstreams to its URIs, and answers once the
    /// client has gone or the gateway stops. Everything is undone when the
    /// call ends, however it ends. `startup` waits for the upstreams'
    /// first connection (which upstream has a URI is known after it).
    pub(crate) async fn listen(
        self: &Arc<Self>,
        session: &Session,
        id: &RequestId,
        params: Option<Value>,
        related: Option<Outbound>,
        cancel: &CancellationToken,
        startup: impl std::future::Future<Output = ()>,
    ) -> Outcome {
        if !session.is_stateless() {
            return Err(RouteError::Protocol(
                ErrorObject::method_not_found(methods::SUBSCRIPTIONS_LISTEN).with_data(json!({
                    "reason": "subscriptions/listen belongs to protocol 2026-07-28; in a session, changes come on the GET stream and resources/subscribe watches a resource"
                })),
            ));
        }
        let filter = ListenFilter::from_params(params.as_ref().unwrap_or(&Value::Null))
            .ok_or_else(|| RouteError::invalid_params("`notifications` must be an object"))?;
        let Some(stream) = related else {
            return Err(RouteError::Protocol(ErrorObject::new(
                codes::INVALID_REQUEST,
                "subscriptions/listen is answered with an event stream: accept text/event-stream",
            )));
        };
        let listener = Arc::new(Listener {
            filter,
            stream: stream.clone(),
            subscription_id: id.clone(),
        });
        let key = format!("listen-{}", uuid::Uuid::new_v4().simple());
        let _registered = ListenRegistration {
            downstream: self.clone(),
            key: key.clone(),
        };
        // The acknowledgment says what the stream carries: the upstreams are
        // subscribed first, so that a change the client makes on seeing it
        // is heard (the first request of the 2026-07-28 era may still be
        // waiting for the upstreams' connections of that era).
        if !listener.filter.resource_uris.is_empty() {
            startup.await;
        }
        for uri in &listener.filter.resource_uris {
            self.watch(uri, &key).await;
        }
        stream
            .send(listener.acknowledgment())
            .await
            .map_err(|_| RouteError::internal("the client went away"))?;
        self.sessions.add_listener(&key, listener.clone());
        tokio::select! {
            () = stream.closed() => {}
            () = cancel.cancelled() => {}
            () = self.stop.cancelled() => {}
        }
        Ok(json!({ "_meta": { SUBSCRIPTION_ID: id } }))
    }

    /// Subscribes the upstreams behind `uri` for subscriber `key`, asking an
    /// upstream only when `key` is its first subscriber there.
    async fn watch(&self, uri: &str, key: &str) {
        let params = json!({ "uri": uri });
        let subscriptions = &self.sessions.subscriptions;
        for (index, source) in self.subscription_targets(uri).0 {
            if !subscriptions.add(index, uri, key) {
                continue;
            }
            if let Err(e) = source
                .request(methods::RESOURCES_SUBSCRIBE, params.clone(), None)
                .await
            {
                subscriptions.remove(index, uri, key);
                tracing::debug!(server = %source.name(), %uri, error = %e, "listen: the upstream refused the subscription");
            }
        }
    }
}

/// Unregisters a listen stream when its call ends, however it ends (the
/// client going away drops the call).
struct ListenRegistration {
    downstream: Arc<Downstream>,
    key: String,
}

impl Drop for ListenRegistration {
    fn drop(&mut self) {
        self.downstream.sessions.remove_listener(&self.key);
        self.downstream.unsubscribe_orphans(&self.key);
    }
}

/// Gives a client's answer to the request of the session's it answers;
/// anything else is left.
fn deliver_answer(session: &Session, answer: Message) {
    match answer {
        Message::Response { id, result } => {
            session.resolve(&id, Ok(result.into_value()));
        }
        Message::Error {
            id: Some(id),
            error,
        } => {
            session.resolve(&id, Err(error));
        }
        _ => {}
    }
}

/// The id of the request a `notifications/cancelled` names.
pub(crate) fn cancelled_request(params: Option<&Value>) -> Option<RequestId> {
    params
        .and_then(|p| p.get("requestId"))
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
}

/// What the other replicas say, until the gateway goes: sessions they
/// deleted end here, messages they received for a session's waiting part
/// here are taken. After the channel was (re)joined, what was deleted
/// meanwhile is looked up.
async fn follow_replicas(
    downstream: Weak<Downstream>,
    mut events: tokio::sync::broadcast::Receiver<StateEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let Some(stop) = downstream.upgrade().map(|d| d.stop.clone()) else {
        return;
    };
    loop {
        let next = tokio::select! {
            next = events.recv() => next,
            () = stop.cancelled() => return,
        };
        let Some(downstream) = downstream.upgrade() else {
            return;
        };
        match next {
            Ok(StateEvent::SessionEnded(id)) => {
                downstream.end(&id);
            }
            Ok(StateEvent::SessionChanged { session, record }) => {
                if let Some(session) = downstream.session(&session) {
                    session.adopt(&record);
                }
            }
            Ok(StateEvent::ForSession { session, message }) => {
                downstream.take_forwarded(&session, &message);
            }
            Ok(StateEvent::Rejoined) | Err(RecvError::Lagged(_)) => {
                downstream.forget_deleted().await;
            }
            Ok(StateEvent::ToClient { session, message }) => {
                downstream.to_own_stream(&session, &message);
            }
            Ok(StateEvent::ListChanged(method)) => {
                downstream.sessions.list_changed_elsewhere(&method);
            }
            // The tasks' own listener hears these, the gateway the questions.
            Ok(
                StateEvent::TaskChanged(_)
                | StateEvent::TaskCancelled(_)
                | StateEvent::TaskResultWaiting(_)
                | StateEvent::Asked { .. },
            ) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

/// Ends sessions idle past the configured timeout, until the gateway goes.
/// A shared session ends here only: its record lasts while another
/// replica renews it.
async fn expire_idle_sessions(downstream: Weak<Downstream>) {
    let (limit, stop) = match downstream.upgrade() {
        Some(d) => (d.idle_timeout, d.stop.clone()),
        None => return,
    };
    let mut tick =
        tokio::time::interval((limit / 4).clamp(Duration::from_secs(1), Duration::from_secs(60)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let Some(downstream) = downstream.upgrade() else {
            return;
        };
        let own_tasks = &downstream.router.own_tasks;
        for id in downstream
            .sessions
            .idle_since(limit, |id| own_tasks.has_tasks(id))
        {
            tracing::info!("a session ended after {limit:?} without use");
            downstream.end(&id);
        }
    }
}
