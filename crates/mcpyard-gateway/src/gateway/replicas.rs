//! Requests that another replica must serve. In the stateless era: a retry
//! whose `requestState` that replica handed out (the suspended call waits
//! there, and a server's own state belongs to that replica's connection),
//! and `tasks/*` for a task an upstream runs behind that replica. The
//! replica that answers with such state or such a task notes it in the
//! shared store; a replica that receives the follow-up asks the holder to
//! serve it whole, and gives its client the holder's answer.
//!
//! And a legacy HTTP+SSE client's messages: its answers travel on its
//! stream, so the replica holding the stream notes it, and one that
//! receives the client's POST hands each message there to be served.

use std::sync::Arc;
use std::time::Duration;

use mcpyard_proto::methods::TASKS_GET;
use mcpyard_proto::{ErrorObject, Message, Payload, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::broadcast::error::RecvError;

use super::{Answer, Gateway};
use crate::call::{Identity, IdentityKind};
use crate::downstream::era;
use crate::router::task_owner;
use crate::state::{stream_key, StateEvent};
use crate::Session;

/// How long a suspended call's state is looked for elsewhere: longer than
/// a client may take to retry.
const HELD_STATE_TTL: Duration = Duration::from_secs(10 * 60);
/// How long an upstream's task is, when its answer says no `ttl`, and at
/// most.
const HELD_TASK_TTL: Duration = Duration::from_secs(60 * 60);
const HELD_TASK_TTL_MAX: Duration = Duration::from_secs(24 * 60 * 60);
/// How long the replica asked may take to serve the request.
const ASK_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How long a legacy stream's holder is noted; renewed at a third of it
/// while the stream is open, so a replica that died is forgotten soon.
const HELD_STREAM_TTL: Duration = Duration::from_secs(60);
/// How long the replica holding a stream may take to take a message on
/// (it answers at once: a request runs there after the reply).
const HAND_ON_TIMEOUT: Duration = Duration::from_secs(30);

/// A request handed to the replica that holds its state, with what the
/// stateless era's request carried besides: who sent it and what its
/// client declared.
#[derive(Debug, Serialize, Deserialize)]
struct Question {
    kind: String,
    name: String,
    groups: Vec<String>,
    scopes: Vec<String>,
    protocol_version: String,
    capabilities: Value,
    request: Value,
    /// The legacy session whose stream the asked replica holds: the
    /// message is served in it, its answer sent on the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_of: Option<String>,
    /// The shared session the request came in (the 2025-11-25 era): the
    /// asked replica serves it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
}

impl Question {
    /// `request` from the client of `session`, with who it is and what it
    /// declared.
    fn new(session: &Session, request: &Message) -> Self {
        let (identity, negotiated) = (session.identity(), session.negotiated());
        Self {
            kind: identity.kind.as_str().to_owned(),
            name: identity.name,
            groups: identity.groups,
            scopes: identity.scopes,
            protocol_version: negotiated.protocol_version,
            capabilities: negotiated.capabilities,
            request: request.to_value(),
            stream_of: None,
            session: session.is_shared().then(|| session.id().to_owned()),
        }
    }
}

/// Whether `session`'s follow-up requests (a retry with `requestState`,
/// `tasks/*` of an upstream's task) may reach another replica than the
/// one that holds what they follow: a stateless request, or a session
/// every replica shares.
fn followed_across_replicas(state_shared: bool, session: &Session) -> bool {
    state_shared && (session.is_stateless() || session.is_shared())
}

/// What names an upstream's task among what a replica holds.
fn task_key(id: &str) -> String {
    format!("task:{id}")
}

/// How many tasks of other replicas one `tasks/list` reads at most.
const LISTED_ELSEWHERE_MAX: usize = 50;

/// What a follow-up request names that one replica holds: the state of a
/// retry, or a task.
fn held_key(method: &str, params: &Value) -> Option<String> {
    if let Some(state) = params.get("requestState").and_then(Value::as_str) {
        let digest = Sha256::digest(state.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        return Some(format!("state:{hex}"));
    }
    if method.starts_with("tasks/") {
        let task = params.get("taskId").and_then(Value::as_str)?;
        return Some(task_key(task));
    }
    None
}

impl Gateway {
    /// The replica that holds what this stateless request follows up,
    /// when it is another one.
    pub(super) async fn held_elsewhere(
        &self,
        session: &Session,
        method: &str,
        params: Option<&Value>,
    ) -> Option<String> {
        let state = &self.inner.state;
        if !followed_across_replicas(state.shared(), session) {
            return None;
        }
        let key = held_key(method, params?)?;
        match state.holder(&key).await {
            Ok(Some(holder)) if holder != state.instance() => Some(holder),
            _ => None,
        }
    }

    /// Notes, for the other replicas, the state or the upstream task this
    /// answer hands its client (the gateway's own tasks are shared through
    /// their records).
    pub(super) async fn note_held(&self, session: &Session, method: &str, result: &Payload) {
        let state = &self.inner.state;
        if !followed_across_replicas(state.shared(), session) {
            return;
        }
        if !result.may_hold_any(&["requestState", "taskId"]) {
            return;
        }
        let result = &*result.to_value();
        let held = if let Some(request_state) = result.get("requestState").and_then(Value::as_str) {
            let params = serde_json::json!({ "requestState": request_state });
            held_key("", &params).map(|key| (key, HELD_STATE_TTL))
        } else if method == mcpyard_proto::methods::TOOLS_CALL {
            let task = result.get("task").unwrap_or(result);
            let ttl = task
                .get("ttlMs")
                .or_else(|| task.get("ttl"))
                .and_then(Value::as_u64)
                .map_or(HELD_TASK_TTL, Duration::from_millis)
                .min(HELD_TASK_TTL_MAX);
            let upstreams = task
                .get("taskId")
                .and_then(Value::as_str)
                .filter(|id| !self.inner.router.own_tasks.owns(id));
            if let (Some(id), Some(owner)) = (upstreams, task_owner(session)) {
                if let Err(e) = state.note_upstream_task(&owner, id, ttl).await {
                    tracing::warn!(error = %e, "not shared: only this replica lists the upstream's task");
                }
            }
            upstreams.map(|id| (task_key(id), ttl))
        } else {
            None
        };
        if let Some((key, ttl)) = held {
            if let Err(e) = state.note_held(&key, ttl).await {
                tracing::warn!(error = %e, "not shared: only this replica can take the follow-up");
            }
        }
    }

    /// The tasks upstreams run for `owner` that other replicas passed
    /// (those not in `known`), each read from the replica that holds it:
    /// what `tasks/list` adds for them.
    pub(super) async fn upstream_tasks_elsewhere(
        &self,
        session: &Session,
        owner: &str,
        known: &[String],
    ) -> Vec<Value> {
        let state = &self.inner.state;
        if !state.shared() {
            return Vec::new();
        }
        let ids = match state.upstream_tasks(owner).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(error = %e, "tasks/list leaves out the upstreams' tasks of other replicas");
                return Vec::new();
            }
        };
        let reads = ids
            .into_iter()
            .filter(|id| !known.contains(id))
            .take(LISTED_ELSEWHERE_MAX)
            .map(|id| async move {
                let holder = state.holder(&task_key(&id)).await.ok().flatten()?;
                if holder == state.instance() {
                    return None;
                }
                let params = serde_json::json!({ "taskId": id });
                let asked = self
                    .ask_holder(
                        &holder,
                        session,
                        RequestId::Number(0),
                        TASKS_GET,
                        Some(params),
                    )
                    .await;
                match asked.into_reply()? {
                    Message::Response { result, .. } => Some(result.into_value()),
                    _ => None,
                }
            });
        futures::future::join_all(reads)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Has replica `holder` serve the request, and answers with its answer.
    pub(super) async fn ask_holder(
        &self,
        holder: &str,
        session: &Session,
        id: RequestId,
        method: &str,
        params: Option<Value>,
    ) -> Answer {
        let retry = params
            .as_ref()
            .is_some_and(|p| p.get("requestState").is_some());
        let question = Question::new(session, &Message::request(id.clone(), method, params));
        let asked = match serde_json::to_string(&question) {
            Ok(text) => self.inner.state.ask(holder, &text, ASK_TIMEOUT).await,
            Err(e) => Err(crate::state::StateError(e.to_string())),
        };
        tracing::debug!(method, "asked the replica that holds the request's state");
        let failed = |why: String| {
            let error = if retry {
                ErrorObject::invalid_params(format!(
                    "`requestState` was handed out by a replica that cannot be reached ({why}): send the request again without it"
                ))
            } else {
                ErrorObject::internal(format!(
                    "the replica that runs this task cannot be reached ({why})"
                ))
            };
            Answer::Reply(Message::error(
                Some(id.clone()),
                era::error_for_modern_era(error),
            ))
        };
        match asked {
            Ok(reply) => match serde_json::from_str::<Option<Message>>(&reply) {
                Ok(Some(answer)) => Answer::Reply(answer),
                Ok(None) => Answer::Withheld(id),
                Err(e) => failed(format!("its answer cannot be read: {e}")),
            },
            Err(e) => failed(e.0),
        }
    }

    /// Notes, while the legacy stream of `session` is open here, that this
    /// replica holds it (shared state only): the client's POSTs that land
    /// on another replica are handed here ([`Gateway::hand_to_stream`]).
    pub fn hold_stream(&self, session: &Arc<Session>) {
        let state = self.inner.state.clone();
        if !state.shared() || !session.is_shared() {
            return;
        }
        let (key, session, stop) = (
            stream_key(session.id()),
            session.clone(),
            self.inner.stop.clone(),
        );
        tokio::spawn(async move {
            loop {
                if let Err(e) = state.note_held(&key, HELD_STREAM_TTL).await {
                    tracing::warn!(error = %e, "not shared: the client's messages reach its stream only through this replica");
                }
                tokio::select! {
                    () = session.ended() => return,
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(HELD_STREAM_TTL / 3) => {}
                }
            }
        });
    }

    /// Whether the stream of `session` is held by another replica: its
    /// client's messages are then handed there.
    pub fn stream_elsewhere(&self, session: &Session) -> bool {
        self.inner.state.shared() && session.is_shared() && session.stream().is_none()
    }

    /// Hands a legacy client's message to the replica holding its
    /// session's stream, which serves it as if it had been posted there
    /// (a request's answer goes on the stream). Returns once that replica
    /// has taken it on; Err says why no replica could.
    pub async fn hand_to_stream(&self, session: &Session, message: Message) -> Result<(), String> {
        let state = &self.inner.state;
        let holder = match state.holder(&stream_key(session.id())).await {
            Ok(Some(holder)) if holder != state.instance() => holder,
            Ok(_) => return Err("no replica holds the session's stream".into()),
            Err(e) => return Err(e.0),
        };
        let question = Question {
            stream_of: Some(session.id().to_owned()),
            ..Question::new(session, &message)
        };
        let text = serde_json::to_string(&question).map_err(|e| e.to_string())?;
        let reply = state
            .ask(&holder, &text, HAND_ON_TIMEOUT)
            .await
            .map_err(|e| e.0)?;
        match serde_json::from_str::<Option<Message>>(&reply) {
            Ok(None) => Ok(()),
            Ok(Some(Message::Error { error, .. })) => Err(error.message),
            Ok(Some(_)) => Err("an unexpected reply".into()),
            Err(e) => Err(format!("its reply cannot be read: {e}")),
        }
    }

    /// A legacy client's message handed on by the replica it reached, for
    /// a session whose stream this one holds: served as a POST here would
    /// be. `None` once taken on; an error when the stream is not here.
    async fn serve_for_stream(
        &self,
        session_id: &str,
        identity: &Identity,
        message: Message,
    ) -> Option<Message> {
        let session = match self.session(session_id) {
            Some(s) if s.stream().is_some() && s.admit(identity) => s,
            _ => {
                return Some(Message::error(
                    None,
                    ErrorObject::invalid_request("the session's stream is not held here"),
                ))
            }
        };
        tracing::debug!("took a legacy client's message from another replica");
        match message {
            Message::Request { id, method, params } => {
                let gateway = self.clone();
                tokio::spawn(async move {
                    let answer = gateway.request(&session, id, &method, params, None).await;
                    if let Some(answer) = answer.into_reply() {
                        session.send(answer, None).await;
                    }
                });
            }
            other => self.receive(&session, other).await,
        }
        None
    }

    /// A request of a shared session's client that another replica hands
    /// this one (which holds what it follows): served in the session.
    async fn serve_in_session(
        &self,
        session_id: &str,
        identity: &Identity,
        id: RequestId,
        method: &str,
        params: Option<Value>,
    ) -> Option<Message> {
        let found = self.inner.downstream.find(session_id).await;
        let Some(session) = found.filter(|s| s.admit(identity)) else {
            return Some(Message::error(
                Some(id),
                ErrorObject::invalid_request("the session is not known here"),
            ));
        };
        tracing::debug!(method, "served a session's request for another replica");
        self.request(&session, id, method, params, None)
            .await
            .into_reply()
    }

    /// Serves the requests other replicas hand this one, until shutdown.
    pub(super) fn serve_other_replicas(&self) {
        let Some(mut events) = self.inner.state.events() else {
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    e = events.recv() => e,
                    () = stop.cancelled() => return,
                };
                match event {
                    Ok(StateEvent::Asked { from, id, question }) => {
                        let Some(inner) = inner.upgrade() else { return };
                        let gateway = Gateway { inner };
                        tokio::spawn(async move { gateway.answer(&from, id, &question).await });
                    }
                    Err(RecvError::Closed) => return,
                    _ => {}
                }
            }
        });
    }

    async fn answer(&self, from: &str, question_id: u64, question: &str) {
        let answer = match serde_json::from_str::<Question>(question) {
            Ok(q) => {
                let identity = Identity {
                    name: q.name,
                    kind: IdentityKind::from_name(&q.kind),
                    groups: q.groups,
                    scopes: q.scopes,
                };
                match (Message::from_value(q.request), q.stream_of) {
                    (Ok(message), Some(stream_of)) => {
                        self.serve_for_stream(&stream_of, &identity, message).await
                    }
                    (Ok(Message::Request { id, method, params }), None) => match q.session {
                        Some(session) => {
                            self.serve_in_session(&session, &identity, id, &method, params)
                                .await
                        }
                        None => {
                            let session = Session::stateless_as(
                                identity,
                                &q.protocol_version,
                                q.capabilities,
                            );
                            tracing::debug!(method, "served a request for another replica");
                            let answer = self.request(&session, id, &method, params, None).await;
                            session.end();
                            answer.into_reply()
                        }
                    },
                    _ => Some(Message::error(
                        None,
                        ErrorObject::invalid_params("not a request"),
                    )),
                }
            }
            Err(e) => Some(Message::error(
                None,
                ErrorObject::internal(format!("a question this replica cannot read: {e}")),
            )),
        };
        let text = serde_json::to_string(&answer).unwrap_or_else(|_| "null".into());
        if let Err(e) = self.inner.state.reply(from, question_id, &text).await {
            tracing::warn!(error = %e, "cannot answer another replica");
        }
    }
}
