//! A downstream client's session: what it negotiated, where to send it
//! messages it did not ask for, and the requests in flight either way.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpyard_proto::{Envelope, ErrorObject, Message, RequestId};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::round_trips::{self, InputSink};
use crate::call::{Era, Identity};
use crate::error::RouteError;
use crate::state::SessionRecord;

/// Where messages for a client go: its session stream (GET stream, legacy
/// SSE stream, stdout) or the response stream of one of its POSTs.
pub type Outbound = mpsc::Sender<Message>;

/// State of one downstream client.
#[derive(Debug)]
pub struct Session {
    id: String,
    /// Sessions of the stateless era live for one request and are never
    /// registered.
    stateless: bool,
    /// Opened by the gateway itself to look at its own state (the status
    /// page, every few seconds while one is open): its reads are not
    /// recorded in the audit trail. No client can open one.
    observer: bool,
    /// Who opened the session, as the front door authenticated them. The
    /// owner (kind and name) is fixed for the session's life; groups and
    /// scopes follow the client's latest credentials (a refreshed token).
    identity: Mutex<Identity>,
    negotiated: Mutex<Negotiated>,
    /// The stream for messages not tied to a request (GET / SSE / stdout).
    stream: Mutex<Option<Outbound>>,
    /// Our requests to the client (sampling...), by the id we gave them.
    pending: Mutex<foldhash::HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>,
    next_id: AtomicI64,
    /// The client's requests being served, so `notifications/cancelled`
    /// can stop them. Written twice per request, so hashed with foldhash:
    /// the ids are the client's, but no more of them than its in-flight cap.
    in_flight: Mutex<foldhash::HashMap<RequestId, CancellationToken>>,
    /// Ended by DELETE, by the stream closing (stdio / SSE) or by shutdown.
    ended: CancellationToken,
    /// Stateless era: where the call behind this request puts what it needs
    /// the client to answer (see `round_trips`). Kept after the request's
    /// first answer: the call goes on and may ask again on a later leg.
    input: Mutex<Option<InputSink>>,
    /// When the client last used the session (a request, or the end of one).
    last_active: Mutex<Instant>,
    /// Progress waiting for room on a full stream, the latest per token.
    held_progress: Arc<Mutex<HashMap<String, Message>>>,
    /// When the session's record in the shared state was last written or
    /// its TTL renewed; `None` while it has no record there.
    shared_at: Mutex<Option<Instant>>,
    /// What the GET stream wrote, for a client that reconnects with
    /// `Last-Event-ID` (kept here when no other replica shares the state).
    stream_log: Mutex<StreamLog>,
}

/// The last messages written on a session's GET stream, by event number.
#[derive(Debug, Default)]
struct StreamLog {
    /// The number of the last message logged; never reused, so that an
    /// event id names one message across reconnections.
    last: u64,
    kept: VecDeque<(u64, String)>,
    /// The bytes of text in `kept`.
    bytes: usize,
}

/// Messages kept per session: as many as the GET stream may hold queued
/// for a slow reader, so that a client reconnecting after a short break
/// loses none, while a session costs a bounded amount of memory (or of
/// Redis) whatever its stream carries.
pub const REPLAY_KEPT: usize = 256;

/// The most text a session's own GET-stream log keeps, whatever the number
/// of messages: 256 large log messages would otherwise hold megabytes per
/// session.
const STREAM_LOG_BYTES: usize = 1 << 20;

/// What the client told us at `initialize` (or per request, stateless).
#[derive(Debug, Clone, Default)]
pub struct Negotiated {
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_info: Value,
    /// The minimum level of `notifications/message` the client wants.
    pub log_level: Option<String>,
    pub initialized: bool,
}

impl Session {
    /// A new session with a fresh unguessable id, for an anonymous client.
    pub fn new(stream: Option<Outbound>) -> Arc<Self> {
        Self::new_as(Identity::anonymous(), stream)
    }

    /// A new session for a client the front door authenticated as `identity`.
    pub fn new_as(identity: Identity, stream: Option<Outbound>) -> Arc<Self> {
        Arc::new(Self::build(false, identity, stream))
    }

    /// A session of the gateway's own, looking at its state as `identity`
    /// may see it (see [`Session::is_observer`]).
    pub fn observer_as(identity: Identity) -> Arc<Self> {
        let mut s = Self::build(false, identity, None);
        s.observer = true;
        Arc::new(s)
    }

    /// Whether the gateway opened the session to look at itself: what it
    /// asks is not audited.
    pub fn is_observer(&self) -> bool {
        self.observer
    }

    /// A one-request session for the stateless era, for an anonymous client.
    pub fn stateless(protocol_version: &str, capabilities: Value) -> Arc<Self> {
        Self::stateless_as(Identity::anonymous(), protocol_version, capabilities)
    }

    /// A one-request session for the stateless era, made as `identity`.
    pub fn stateless_as(
        identity: Identity,
        protocol_version: &str,
        capabilities: Value,
    ) -> Arc<Self> {
        let s = Self::build(true, identity, None);
        {
            let mut n = s.negotiated.lock().expect("session lock poisoned");
            n.protocol_version = protocol_version.to_owned();
            n.capabilities = capabilities;
            n.initialized = true;
        }
        Arc::new(s)
    }

    /// A one-request session for a stateless-era request that came on the
    /// connection of `parent` (stdio, or a transport's own session): it
    /// writes to the parent's stream and ends when the parent does.
    pub(crate) fn for_request(parent: &Session, envelope: Envelope) -> Arc<Self> {
        let mut s = Self::build(true, parent.identity(), parent.stream());
        s.ended = parent.ended.child_token();
        let session = Arc::new(s);
        session.update(|n| {
            n.protocol_version = envelope.version;
            n.capabilities = envelope.capabilities;
            n.initialized = true;
        });
        session
    }

    fn build(stateless: bool, identity: Identity, stream: Option<Outbound>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().simple().to_string(),
            stateless,
            observer: false,
            identity: Mutex::new(identity),
            negotiated: Mutex::new(Negotiated::default()),
            stream: Mutex::new(stream),
            pending: Mutex::default(),
            next_id: AtomicI64::new(1),
            in_flight: Mutex::default(),
            ended: CancellationToken::new(),
            input: Mutex::default(),
            last_active: Mutex::new(Instant::now()),
            held_progress: Arc::default(),
            shared_at: Mutex::default(),
            stream_log: Mutex::default(),
        }
    }

    /// A session another replica opened, from its record in the shared
    /// state: same id, owner and negotiation, no stream yet.
    pub(crate) fn restore(id: String, record: &SessionRecord) -> Arc<Self> {
        let mut s = Self::build(false, record.owner(), None);
        s.id = id;
        *s.negotiated.get_mut().expect("session lock poisoned") = Negotiated {
            protocol_version: record.protocol_version.clone(),
            capabilities: record.capabilities.clone(),
            client_info: record.client_info.clone(),
            log_level: record.log_level.clone(),
            initialized: record.initialized,
        };
        *s.shared_at.get_mut().expect("session lock poisoned") = Some(Instant::now());
        Arc::new(s)
    }

    /// Takes what another replica changed in the session's record: the
    /// rest was fixed when the session began.
    pub(crate) fn adopt(&self, record: &SessionRecord) {
        let mut n = self.negotiated.lock().expect("session lock poisoned");
        n.log_level.clone_from(&record.log_level);
        n.initialized |= record.initialized;
    }

    /// What another replica needs to serve this session.
    pub(crate) fn record(&self) -> SessionRecord {
        let owner = self.identity();
        let n = self.negotiated();
        SessionRecord {
            identity_kind: owner.kind.as_str().to_owned(),
            identity_name: owner.name,
            protocol_version: n.protocol_version,
            capabilities: n.capabilities,
            client_info: n.client_info,
            log_level: n.log_level,
            initialized: n.initialized,
        }
    }

    /// Notes that the shared record was written or renewed now.
    pub(crate) fn mark_shared(&self) {
        *self.shared_at.lock().expect("session lock poisoned") = Some(Instant::now());
    }

    /// Whether the session has a shared record last renewed `every` or
    /// longer ago (and notes it renewed now, so one caller renews it).
    pub(crate) fn shared_record_due(&self, every: Duration) -> bool {
        let mut at = self.shared_at.lock().expect("session lock poisoned");
        match *at {
            Some(t) if t.elapsed() >= every => {
                *at = Some(Instant::now());
                true
            }
            _ => false,
        }
    }

    /// Whether the session has a record in the shared state.
    pub(crate) fn is_shared(&self) -> bool {
        self.shared_at
            .lock()
            .expect("session lock poisoned")
            .is_some()
    }

    /// Notes that the client used the session.
    pub(crate) fn touch(&self) {
        *self.last_active.lock().expect("session lock poisoned") = Instant::now();
    }

    /// How long the session has been idle: `None` while it is in use (a
    /// stream open, a request in flight).
    pub(crate) fn idle_for(&self) -> Option<std::time::Duration> {
        let busy = self.has_stream()
            || !self
                .in_flight
                .lock()
                .expect("session lock poisoned")
                .is_empty();
        (!busy).then(|| {
            self.last_active
                .lock()
                .expect("session lock poisoned")
                .elapsed()
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn is_stateless(&self) -> bool {
        self.stateless
    }

    /// The era of the session's requests, which decides the catalogue
    /// they see.
    pub(crate) fn era(&self) -> Era {
        if self.stateless {
            Era::Modern
        } else {
            Era::Handshake
        }
    }

    /// Who the session belongs to, with the groups and scopes of their
    /// latest request.
    pub fn identity(&self) -> Identity {
        self.identity.lock().expect("session lock poisoned").clone()
    }

    /// Lets `identity` use the session when it is the one that opened it
    /// (same kind and name), taking on its current groups and scopes.
    /// Returns false, changing nothing, for anyone else: a session id that
    /// leaks does not lend its owner's rights.
    pub fn admit(&self, identity: &Identity) -> bool {
        let mut owner = self.identity.lock().expect("session lock poisoned");
        if !same_identity(&owner, identity) {
            return false;
        }
        if *owner != *identity {
            owner.clone_from(identity);
        }
        true
    }

    /// Whether the session is `identity`'s: the same kind and name, whatever
    /// groups and scopes either carries now.
    pub(crate) fn belongs_to(&self, identity: &Identity) -> bool {
        same_identity(
            &self.identity.lock().expect("session lock poisoned"),
            identity,
        )
    }

    pub fn negotiated(&self) -> Negotiated {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .clone()
    }

    pub fn protocol_version(&self) -> String {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .protocol_version
            .clone()
    }

    pub(crate) fn update(&self, f: impl FnOnce(&mut Negotiated)) {
        f(&mut self.negotiated.lock().expect("session lock poisoned"));
    }

    /// Whether the client declared `capabilities.<name>` (sampling,
    /// elicitation, roots).
    pub fn has_capability(&self, name: &str) -> bool {
        self.negotiated
            .lock()
            .expect("session lock poisoned")
            .capabilities
            .get(name)
            .is_some_and(|v| !v.is_null())
    }

    /// Whether a `notifications/message` at `level` passes the level the
    /// client set with `logging/setLevel` (everything passes until it does).
    pub fn wants_log(&self, level: &str) -> bool {
        let n = self.negotiated.lock().expect("session lock poisoned");
        match &n.log_level {
            None => true,
            Some(min) => log_severity(level) >= log_severity(min),
        }
    }

    /// Attaches the session stream (a GET stream opened, or stdout).
    /// Returns false when one is already attached and still open.
    pub fn attach_stream(&self, tx: Outbound) -> bool {
        let mut slot = self.stream.lock().expect("session lock poisoned");
        if slot.as_ref().is_some_and(|s| !s.is_closed()) {
            return false;
        }
        *slot = Some(tx);
        true
    }

    /// The session stream, when one is attached.
    pub(crate) fn stream(&self) -> Option<Outbound> {
        self.stream.lock().expect("session lock poisoned").clone()
    }

    /// Whether a session stream is attached and open.
    pub fn has_stream(&self) -> bool {
        self.stream
            .lock()
            .expect("session lock poisoned")
            .as_ref()
            .is_some_and(|s| !s.is_closed())
    }

    /// Sends a message that must not be lost (an answer, a request to the
    /// client) on `related` when given and open, else on the session stream,
    /// waiting for room. Returns false when neither could take it.
    pub async fn send(&self, msg: Message, related: Option<&Outbound>) -> bool {
        if let Some(tx) = related {
            if !tx.is_closed() {
                match tx.send(msg).await {
                    Ok(()) => return true,
                    Err(mpsc::error::SendError(m)) => return self.send_on_stream(m).await,
                }
            }
        }
        self.send_on_stream(msg).await
    }

    async fn send_on_stream(&self, msg: Message) -> bool {
        let tx = self.stream.lock().expect("session lock poisoned").clone();
        match tx {
            Some(tx) => tx.send(msg).await.is_ok(),
            None => false,
        }
    }

    /// Sends a notification on `related` when given and open, else on the
    /// session stream, without ever waiting: whoever calls this (an
    /// upstream's reader) serves other clients too. On a full stream a
    /// progress notification is held, only the latest per token, until
    /// there is room; anything else is dropped. Returns false when no
    /// stream could take it.
    pub fn notify(&self, msg: Message, related: Option<&Outbound>) -> bool {
        let msg = match related.filter(|tx| !tx.is_closed()) {
            Some(tx) => match self.offer(tx, msg) {
                Ok(()) => return true,
                Err(m) => m,
            },
            None => msg,
        };
        let stream = self.stream.lock().expect("session lock poisoned").clone();
        let msg = match stream {
            Some(tx) => match self.offer(&tx, msg) {
                Ok(()) => return true,
                Err(m) => m,
            },
            None => msg,
        };
        self.log_while_detached(&msg);
        false
    }

    /// A message for a GET stream that broke and was not opened again yet:
    /// kept in the session's log after what the stream wrote, so that the
    /// client, reconnecting with the last event id it saw, gets it too.
    /// A session whose stream never wrote anything has no id to resume
    /// from, and a shared one's log is written by the replica that holds
    /// its stream.
    fn log_while_detached(&self, msg: &Message) {
        if self.is_shared() || self.is_ended() {
            return;
        }
        let resumable = self
            .stream_log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last
            > 0;
        if resumable {
            if let Ok(json) = serde_json::to_string(msg) {
                self.log_stream_message(&json, REPLAY_KEPT);
            }
        }
    }

    /// Queues `msg` on `tx` if there is room, holds or drops it if not.
    /// Gives it back only when `tx` is closed.
    fn offer(&self, tx: &Outbound, msg: Message) -> Result<(), Message> {
        let token = progress_token(&msg);
        if let Some(token) = &token {
            let mut held = self.held_progress.lock().expect("session lock poisoned");
            // Progress already waits for this token: the newer one replaces
            // it rather than overtaking it.
            if let Some(waiting) = held.get_mut(token) {
                *waiting = msg;
                return Ok(());
            }
        }
        match tx.try_send(msg) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(m)) => Err(m),
            Err(mpsc::error::TrySendError::Full(m)) => {
                match token {
                    Some(token) => self.hold_progress(tx, token, m),
                    None => tracing::debug!(
                        session = %self.id,
                        method = m.method().unwrap_or_default(),
                        "client stream full: notification dropped"
                    ),
                }
                Ok(())
            }
        }
    }

    /// Keeps `msg` as the latest progress for `token` and, unless one runs
    /// already, starts a task that sends the latest held when `tx` has room.
    fn hold_progress(&self, tx: &Outbound, token: String, msg: Message) {
        {
            let mut held = self.held_progress.lock().expect("session lock poisoned");
            if held.insert(token.clone(), msg).is_some() {
                return;
            }
        }
        let held = self.held_progress.clone();
        let tx = tx.clone();
        let ended = self.ended.clone();
        tokio::spawn(async move {
            let permit = tokio::select! {
                permit = tx.reserve() => permit.ok(),
                () = ended.cancelled() => None,
            };
            // Taken and sent under the lock: a newer progress that finds
            // nothing held must not reach the stream before this one.
            let mut held = held.lock().expect("session lock poisoned");
            if let (Some(permit), Some(latest)) = (permit, held.remove(&token)) {
                permit.send(latest);
            }
        });
    }

    /// Lets the call serving this stateless request ask the client for input.
    pub(crate) fn accept_input(&self, sink: InputSink) {
        *self.input.lock().expect("session lock poisoned") = Some(sink);
    }

    /// Sends a request to the client and waits for its answer. In the
    /// stateless era it travels in an `input_required` result instead.
    pub async fn request_client(
        &self,
        method: &str,
        params: Option<Value>,
        related: Option<&Outbound>,
        timeout: Duration,
    ) -> Result<Value, RouteError> {
        if self.stateless {
            let sink = self.input.lock().expect("session lock poisoned").clone();
            return match sink {
                Some(sink) => round_trips::ask(&sink, method, params, timeout).await,
                None => Err(RouteError::internal(format!(
                    "{method} cannot reach the client: in protocol 2026-07-28 only tools/call, prompts/get and resources/read can carry input requests"
                ))),
            };
        }
        self.ask_client(method, params, timeout, |request| {
            self.send(request, related)
        })
        .await
    }

    /// Sends a request to the client with `deliver` (false: it could not
    /// be sent) and waits, at most `timeout`, for its answer.
    pub(crate) async fn ask_client<F, D>(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        deliver: D,
    ) -> Result<Value, RouteError>
    where
        D: FnOnce(Message) -> F,
        F: std::future::Future<Output = bool>,
    {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        // A shared session gets requests from several replicas: each names
        // its own, so that the client's answers never mix them up.
        let id = RequestId::String(if self.is_shared() {
            format!("mcpyard-{}-{n}", process_tag())
        } else {
            format!("mcpyard-{n}")
        });
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .expect("session lock poisoned")
            .insert(id.clone(), tx);
        // A client that does not read its stream runs into the timeout
        // like one that does not answer.
        let exchange = async {
            let request = Message::request(id.clone(), method, params);
            if !deliver(request).await {
                return Err(RouteError::internal(
                    "the client has no open stream to receive the request",
                ));
            }
            match rx.await {
                // The client's own error, passed on as it said it.
                Ok(answer) => answer.map_err(RouteError::Protocol),
                Err(_) => Err(RouteError::internal("the client session ended")),
            }
        };
        let outcome = tokio::select! {
            r = exchange => r,
            _ = tokio::time::sleep(timeout) => Err(RouteError::internal(format!("the client did not answer {method} within {timeout:?}"))),
            _ = self.ended.cancelled() => Err(RouteError::internal("the client session ended")),
        };
        self.pending
            .lock()
            .expect("session lock poisoned")
            .remove(&id);
        outcome
    }

    /// Whether a request of ours with this id waits for the client's answer.
    pub(crate) fn awaits(&self, id: &RequestId) -> bool {
        self.pending
            .lock()
            .expect("session lock poisoned")
            .contains_key(id)
    }

    /// Whether a request of the client's with this id is being served here.
    pub(crate) fn serves(&self, id: &RequestId) -> bool {
        self.in_flight
            .lock()
            .expect("session lock poisoned")
            .contains_key(id)
    }

    /// Delivers a client's response to one of our requests. Returns false
    /// when no request of ours has that id.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Result<Value, ErrorObject>) -> bool {
        match self
            .pending
            .lock()
            .expect("session lock poisoned")
            .remove(id)
        {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    pub(crate) fn begin_request(&self, id: &RequestId) -> CancellationToken {
        let token = self.ended.child_token();
        self.in_flight
            .lock()
            .expect("session lock poisoned")
            .insert(id.clone(), token.clone());
        token
    }

    pub(crate) fn finish_request(&self, id: &RequestId) {
        self.touch();
        self.in_flight
            .lock()
            .expect("session lock poisoned")
            .remove(id);
    }

    pub(crate) fn cancel_request(&self, id: &RequestId) {
        if let Some(t) = self
            .in_flight
            .lock()
            .expect("session lock poisoned")
            .get(id)
        {
            t.cancel();
        }
    }

    /// Logs `json`, written on the GET stream, keeping the last `keep`
    /// messages; its number, the event's id.
    pub(crate) fn log_stream_message(&self, json: &str, keep: usize) -> u64 {
        let mut log = self.stream_log.lock().unwrap_or_else(|e| e.into_inner());
        log.last += 1;
        let number = log.last;
        while log.kept.len() >= keep.max(1)
            || (!log.kept.is_empty() && log.bytes + json.len() > STREAM_LOG_BYTES)
        {
            if let Some((_, gone)) = log.kept.pop_front() {
                log.bytes -= gone.len();
            }
        }
        log.bytes += json.len();
        log.kept.push_back((number, json.to_owned()));
        number
    }

    /// The messages logged after number `after`, oldest first; `None` when
    /// `after` is not in the log (never given, or pushed out by newer ones:
    /// what followed it is no longer whole).
    pub(crate) fn stream_messages_after(&self, after: u64) -> Option<Vec<(u64, String)>> {
        let log = self.stream_log.lock().unwrap_or_else(|e| e.into_inner());
        let at = log.kept.iter().position(|(n, _)| *n == after)?;
        Some(log.kept.iter().skip(at + 1).cloned().collect())
    }

    /// Ends the session: in-flight requests are cancelled, waits fail.
    pub fn end(&self) {
        self.ended.cancel();
        *self.stream.lock().expect("session lock poisoned") = None;
    }

    pub fn is_ended(&self) -> bool {
        self.ended.is_cancelled()
    }

    /// Resolves when the session ends.
    pub async fn ended(&self) {
        self.ended.cancelled().await
    }
}

/// This process among the replicas, in the ids of its requests to clients.
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| uuid::Uuid::new_v4().simple().to_string()[..8].to_owned())
}

/// The token of a `notifications/progress`, as a map key.
fn progress_token(msg: &Message) -> Option<String> {
    match msg {
        Message::Notification {
            method,
            params: Some(params),
        } if method == mcpyard_proto::methods::NOTIFICATION_PROGRESS => {
            params.get("progressToken").map(Value::to_string)
        }
        _ => None,
    }
}

/// RFC 5424 severities as MCP names them, least severe first.
pub(crate) fn log_severity(level: &str) -> usize {
    const LEVELS: [&str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    LEVELS.iter().position(|l| *l == level).unwrap_or(1)
}

/// Whether `level` is one of the eight MCP log levels.
pub(crate) fn is_log_level(level: &str) -> bool {
    matches!(
        level,
        "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" | "emergency"
    )
}

/// One identity, as sessions know it: the same kind of credential and name.
fn same_identity(a: &Identity, b: &Identity) -> bool {
    a.kind == b.kind && a.name == b.name
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn progress(n: u64) -> Message {
        Message::notification(
            mcpyard_proto::methods::NOTIFICATION_PROGRESS,
            Some(json!({"progressToken": "t", "progress": n})),
        )
    }

    fn progress_of(m: &Message) -> Option<u64> {
        match m {
            Message::Notification {
                params: Some(p), ..
            } => p["progress"].as_u64(),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_full_stream_keeps_only_the_latest_progress_and_drops_the_rest() {
        let session = Session::new(None);
        let (tx, mut rx) = mpsc::channel(1);
        assert!(session.notify(progress(1), Some(&tx)));
        // Full from here on: never waits, whatever comes.
        assert!(session.notify(progress(2), Some(&tx)));
        assert!(session.notify(
            Message::notification("notifications/message", None),
            Some(&tx)
        ));
        assert!(session.notify(progress(3), Some(&tx)));
        assert_eq!(rx.recv().await.as_ref().and_then(progress_of), Some(1));
        // The latest held progress takes the room freed, ahead of newer
        // progress, so the order stays.
        let next = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the held progress is sent once there is room");
        assert_eq!(next.as_ref().and_then(progress_of), Some(3));
        assert!(session.notify(progress(4), Some(&tx)));
        assert_eq!(rx.recv().await.as_ref().and_then(progress_of), Some(4));
        assert!(rx.try_recv().is_err(), "nothing else was kept");
    }

    #[tokio::test]
    async fn a_notification_goes_to_the_session_stream_once_its_own_is_closed() {
        let (stream_tx, mut stream_rx) = mpsc::channel(4);
        let session = Session::new(Some(stream_tx));
        let (closed_tx, closed_rx) = mpsc::channel(4);
        drop(closed_rx);
        assert!(session.notify(progress(1), Some(&closed_tx)));
        assert_eq!(
            stream_rx.recv().await.as_ref().and_then(progress_of),
            Some(1)
        );
        session.end();
        assert!(!session.notify(progress(2), None), "no stream is left");
    }

    #[test]
    fn what_comes_while_the_stream_is_broken_is_logged_for_its_return() {
        let session = Session::new(None);
        let update = |n: u64| Message::notification("notifications/message", Some(json!({"n": n})));
        // No stream ever wrote: nothing to resume from, nothing kept.
        assert!(!session.notify(update(0), None));
        assert_eq!(session.stream_messages_after(0), None);

        let (tx, rx) = mpsc::channel(8);
        assert!(session.attach_stream(tx));
        let written = session.log_stream_message(r#"{"n":1}"#, 256);
        drop(rx);
        assert!(!session.notify(update(2), None), "the stream is gone");
        let kept = session
            .stream_messages_after(written)
            .expect("the written one is kept");
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept[0].1.contains(r#""n":2"#), "{kept:?}");

        session.end();
        assert!(!session.notify(update(3), None));
        assert_eq!(
            session.stream_messages_after(written).map(|m| m.len()),
            Some(1),
            "an ended session keeps nothing more"
        );
    }

    #[test]
    fn the_stream_log_replays_what_followed_a_kept_number_only() {
        let session = Session::new(None);
        for n in 1..=5 {
            assert_eq!(session.log_stream_message(&format!("m{n}"), 3), n);
        }
        let after = |n| session.stream_messages_after(n);
        assert_eq!(after(3), Some(vec![(4, "m4".into()), (5, "m5".into())]));
        assert_eq!(after(5), Some(vec![]));
        assert_eq!(after(2), None, "pushed out: what followed is not whole");
        // A bound on the text too: two messages of half the budget do not
        // fit beside a third.
        let half = "x".repeat(STREAM_LOG_BYTES / 2);
        let first = session.log_stream_message(&half, 256);
        let second = session.log_stream_message(&half, 256);
        let third = session.log_stream_message(&half, 256);
        assert_eq!(after(first), None);
        assert_eq!(after(second).map(|m| m.len()), Some(1));
        assert_eq!(after(third), Some(vec![]));
        assert_eq!(after(9), None, "never given");
    }
}
